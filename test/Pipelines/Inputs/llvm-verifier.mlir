// Verifies as MLIR; LLVM's verifier rejects it (llvm.used is appending).
llvm.mlir.global private @llvm.used() : i32
