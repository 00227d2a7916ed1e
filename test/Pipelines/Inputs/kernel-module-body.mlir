gpu.module @kernels {
  nvvm.barrier0
  llvm.func @k() attributes {nvvm.kernel} {
    llvm.return
  }
}
func.func @host() {
  return
}
