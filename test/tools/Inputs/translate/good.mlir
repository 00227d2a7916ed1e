llvm.func @f(%a: i32) -> i32 {
  llvm.return %a : i32
}
