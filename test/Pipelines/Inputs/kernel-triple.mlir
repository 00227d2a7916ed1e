// Translation to LLVM IR (of the kernels, in gpu-module-to-binary) casts
// the triple to a string: this crashed it.
gpu.module @kernels attributes {llvm.target_triple = 3 : i64} {
  llvm.func @k() attributes {nvvm.kernel} {
    llvm.return
  }
}
func.func @host() {
  return
}
