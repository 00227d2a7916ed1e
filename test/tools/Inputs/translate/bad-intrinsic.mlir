llvm.func @f(%a: i32) -> i32 {
  %r = llvm.call_intrinsic "llvm.no.such.intrinsic"(%a) : (i32) -> i32
  llvm.return %r : i32
}
