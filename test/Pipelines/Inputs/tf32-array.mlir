// The LLVM dialect verifies an array of tf32; translation crashed on it.
llvm.mlir.global private constant @table(dense<1.0> : tensor<4xf32>) : !llvm.array<4 x tf32>
