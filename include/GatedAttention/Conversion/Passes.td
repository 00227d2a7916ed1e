//===- Passes.td - gated-attention conversion passes -------*- tablegen -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_PASSES_TD
#define GATED_ATTENTION_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

// Op-agnostic (like upstream conversions): runs on a module, a func.func or
// a gpu.func alike, so `--convert-gated-attention-to-linalg` works on the
// command line without an explicit nesting.
def ConvertGatedAttentionToLinalgPass
    : Pass<"convert-gated-attention-to-linalg"> {
  let summary = "Reference lowering of gated_attention ops to linalg on tensors";
  let description = [{
    Expresses every `gated_attention.attention` with upstream linalg, tensor,
    arith and math ops on tensors, materializing the `Sq x Skv` score matrix.
    It is the oracle that the tiled and GPU paths are tested against, not a
    fast path.

    Query (and per-head gate) heads are split into `Hkv x R` with
    `tensor.expand_shape`, so key and value are read through indexing maps and
    never repeated for grouped-query attention. Scores, row max, exponentials,
    row sums and `P * V` accumulate in f32; the epilogue divides by the row
    sum (0 for a row without a visible key), applies the gate activation and
    the combine, and converts to the element type once.

    ```mlir
    // Input
    %o = gated_attention.attention %q, %k, %v, %g {causal}
        : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>,
           tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
    // Output: tensor.expand_shape of %q to 1x2x4x64x32, linalg.generic ops for
    // Q*K^T, scale + causal mask, row max, exp, row sum, P*V and the gated
    // epilogue, then tensor.collapse_shape back to 1x8x64x32.
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def ConvertGatedAttentionToParallelRowsPass
    : Pass<"convert-gated-attention-to-parallel-rows"> {
  let summary = "SIMT form: one query row per parallel iteration (GPU threads)";
  let description = [{
    Rewrites every `gated_attention.attention` into memref code in two
    nested `scf.parallel` loops, `(B, Hq, row blocks)` outside and
    `rows-per-block` rows inside, each inner iteration computing one query
    row with the online softmax over its visible keys (the causal bound ends
    the key loop; no mask), the accumulator in a private `Dv`-element
    buffer, and the gate in the epilogue. `gpu-map-parallel-loops` maps the
    loops to blocks and threads: this is the SIMT GPU path (and, run on the
    CPU, it is tested against the reference like every other path).

    ```mlir
    %o = gated_attention.attention %q, %k, %v, %g {causal} : ...
    // becomes
    scf.parallel (%b, %h, %blk) = ... {      // GPU blocks
      scf.parallel (%t) = (%c0) to (%c128) { // GPU threads: row blk*128+t
        scf.if %row_in_range { ... scf.for over keys ... }
      }
    }
    ```
  }];
  let options = [
    Option<"rowsPerBlock", "rows-per-block", "int64_t", /*default=*/"128",
           "Query rows (threads) per block">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def ConvertMemRefCopyToLinalgPass : Pass<"convert-memref-copy-to-linalg"> {
  let summary = "Turn memref.copy into linalg.copy so that copies become loops";
  let description = [{
    `finalize-memref-to-llvm` lowers a `memref.copy` between non-contiguous
    views (the padded tiles of the online-softmax form) to a call to
    `memrefCopy` in `libmlir_c_runner_utils.so`: an element-by-element
    generic copy, and a library that links `libMLIR.so` and `libLLVM.so`
    into every process that loads a compiled kernel. As `linalg.copy` the
    copy is lowered to loops (which LLVM vectorizes) like every other linalg
    op, and the kernel needs no MLIR runtime library.

    ```mlir
    memref.copy %a, %b : memref<?x32xf32, strided<[32, 1], offset: ?>> to memref<?x32xf32, strided<[32, 1]>>
    // becomes
    linalg.copy ins(%a : ...) outs(%b : ...)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif // GATED_ATTENTION_CONVERSION_PASSES_TD
