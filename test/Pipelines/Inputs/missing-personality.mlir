// Translation to LLVM IR resolves the personality unchecked: a SEGV.
llvm.func @f() attributes {personality = @nope} {
  llvm.return
}
