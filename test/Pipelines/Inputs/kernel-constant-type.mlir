gpu.module @kernels {
  llvm.mlir.global internal constant @table(dense<2.0> : tensor<64xf32>) {addr_space = 4 : i32} : !llvm.array<4294967296 x f32>
  llvm.func @k() attributes {nvvm.kernel} {
    llvm.return
  }
}
