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
    row sums and `P * V` accumulate in the accumulator type (f32, or f64
    for f64 ops); the epilogue divides by the row sum (0 for a row without a
    visible key), applies the gate activation and the combine, and converts
    to the element type once. With `wide-only` it lowers only the f64 ops
    (those the tiled lowerings, which accumulate in f32, do not take) and
    leaves the others: what `--gated-attention-to-llvm` runs before tiling.

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
  let options = [
    Option<"wideOnly", "wide-only", "bool", /*default=*/"false",
           "Lower only the ops that accumulate wider than f32 (f64)">
  ];
}

def ConvertGatedAttentionBackwardToLinalgPass
    : Pass<"convert-gated-attention-backward-to-linalg"> {
  let summary = "Reference lowering of gated_attention.attention_backward to "
                "linalg on tensors";
  let description = [{
    Expresses every `gated_attention.attention_backward` with upstream
    linalg, tensor, arith and math ops on tensors, materializing the
    `Sq x Skv` weights `P` (recomputed from the scores, as the forward's
    reference lowering computes them), `dP = dY V^T` and
    `dS = scale * P * (dP - D)`. Query, output and gradient heads are split
    into `Hkv x R`, so `dK = dS^T Q` and `dV = P^T dY` sum over each GQA
    group as reductions of one `linalg.generic`. Everything accumulates in
    the accumulator type (f32, or f64 for f64 ops) and each gradient is
    rounded to the element type once; `wide-only` lowers only the f64 ops,
    which the tiled backward does not take. The
    ungated output is recomputed (`P V`) only for the gates whose gradient
    needs it (SiLU, `combine = add`; see docs/Backward.md); sigmoid and
    NS-sigmoid with `mul` read the saved output instead. It is the oracle
    of the fused backward lowerings, not a fast path; the CPU pipeline
    (`--gated-attention-to-llvm`) runs it.

    ```mlir
    // Input
    %dq, %dk, %dv, %dg = gated_attention.attention_backward
        %q, %k, %v, %out, %dout, %g {causal}
        : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>,
           tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>,
           tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>)
        -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>,
            tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>)
    // Output: tensor.expand_shape of %q, %out, %dout (and %g) to
    // 1x2x4x64x32, linalg.generic ops for the weights, dY, D, dP, dS, dQ,
    // dK, dV and dG, then tensor.collapse_shape back to 1x8x64x32.
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"wideOnly", "wide-only", "bool", /*default=*/"false",
           "Lower only the ops that accumulate wider than f32 (f64)">
  ];
}

def ConvertGatedAttentionToNVGPUPass
    : Pass<"convert-gated-attention-to-nvgpu", "::mlir::ModuleOp"> {
  let summary = "Tensor-core flash kernel (mma.sync + cp.async, or wgmma + "
                "TMA on sm_90a) for f16/bf16";
  let description = [{
    Replaces every f16/bf16 `gated_attention.attention` whose head dims are
    static multiples of 16 up to 256 by a `gpu.launch_func` of a
    FlashAttention-2 forward kernel with the gate fused into its epilogue,
    emitted into a `gpu.module` of the enclosing module. Other ops (f32,
    other head dims) are left alone, for the SIMT lowering. Tiles the
    options ask for that an op cannot use (more than 8 warps, a K/V tile
    that does not split evenly over the threads, shared memory beyond what
    a CTA of `chip` may use) are an error at the op, not a fall back.
    The launches are synchronous (the PTX pipeline frees host buffers after
    them); an asynchronous `gpu.launch_func` given a memref in the input is
    an error at that launch.

    One CTA of `warps` warps computes `16 * warps` query rows of one
    (batch, query head); grid `(ceildiv(Sq, 16 * warps), Hq, B)`. K/V tiles
    of `key-block` rows are copied into dynamic shared memory with `cp.async`
    (`nvgpu.device_async_copy`), double buffered; Q * K^T and P * V run on
    `mma.sync.m16n8k16` with f32 accumulators, operands loaded with
    `ldmatrix` (`.trans` for V) from XOR-swizzled tiles; row max and sum are
    reduced across the quad with `gpu.shuffle`; the score accumulators are
    reused as the A operand of P * V. Key blocks above the causal diagonal
    are never visited; only diagonal and tail blocks apply a mask; sequence
    lengths are kernel arguments. One kernel per configuration: ops that
    differ only in B, Sq or Skv share it.

    With `kernel=wgmma` (and `chip=sm_90a`), ops whose head dims are
    multiples of 64 get the Hopper kernel instead, with
    FlashAttention-3's warp specialization: a producer warpgroup that gives
    up registers (`setmaxnreg`) and issues the TMA copies of Q, K and V
    through maps the host makes (`nvgpu.tma.create.descriptor`, passed as
    pointers) into 128B-swizzled shared memory, a two-stage K/V ring on
    full/empty mbarriers, and `warps / 4` consumer warpgroups of 64 query
    rows each (default 8 warps: 128 rows, 384 threads) running Q * K^T as a
    shared-memory wgmma and P * V as a register-A wgmma, the softmax of one
    key block overlapping P * V of the previous one and (D <= 128) the two
    consumers taking turns on named barriers, with the same online softmax
    and gated epilogue. `kernel=auto` takes this kernel's forward on sm_90a
    (it has been checked and measured on an H200) and keeps the mma.sync
    backward, whose wgmma form `kernel=wgmma` selects.

    `gated_attention.paged_attention` ops of the same types get the paged
    form of the kernel: K/V rows read through the block table, queries,
    gate and output packed, the query heads of one K/V head packed into a
    CTA's rows, grid `(ceildiv(T, rows / G) + B, Hq / G)` with lengths and
    offsets read by the kernel. With `kernel=wgmma` the whole producer
    warpgroup copies those rows by cp.async into the swizzled layout,
    arriving on the full mbarriers as its copies land (TMA boxes cannot
    follow a block table); its split-KV kernels stay mma.sync. Where that grid is
    small (decode), the host code splits each tile's keys across CTAs
    (split-KV: grid z) into f32 partials that a merge kernel combines and
    gates; the number of splits comes from sizes alone, not lengths.

    Each kernel's launch description (versioned JSON: kernel name, grid and
    block as functions of B, Hq, Sq, dynamic shared memory bytes, argument
    order and calling convention, TMA maps and boxes) is an entry of the
    `gated_attention.kernels` dictionary on the enclosing module, which
    survives serialization; `python3 -m gated_attention.ptx` writes it next
    to the PTX, and `python/gated_attention/launch.py` reads it.

    ```mlir
    %o = gated_attention.attention %q, %k, %v, %g {causal}
        : (tensor<1x16x?x128xbf16>, ...) -> tensor<1x16x?x128xbf16>
    // becomes
    gpu.launch_func @gated_attention_bf16_h16x2_d128_causal::@...
        blocks in (%sq_blocks, %c16, %c1) threads in (%c128, %c1, %c1)
        dynamic_shared_memory_size %c81920_i32
        args(%q : memref<?xbf16>, ..., %sq : index, %skv : index)
    ```
  }];
  let options = [
    Option<"warps", "warps", "int64_t", /*default=*/"0",
           "Warps per CTA that compute, 16 query rows each; 0 picks 4 for "
           "head dims up to 128 and 8 above (mma-sync), 8 (wgmma: two "
           "consumer warpgroups, plus the producer's; 4 or 8)">,
    Option<"keyBlock", "key-block", "int64_t", /*default=*/"0",
           "Keys per shared-memory K/V tile (a multiple of 16); 0 picks 128 "
           "for head dims up to 64, 64 up to 128 and 32 above (mma-sync); "
           "FlashAttention-3's 128 up to 64, 176 up to 128 and 80 above, "
           "128 and 64 when causal (wgmma, at most 256)">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "Target GPU (sm_80, sm_86, sm_89, sm_90, sm_90a): bounds the "
           "tiles' shared memory">,
    Option<"kernel", "kernel", "std::string", /*default=*/"\"auto\"",
           "Which kernel: mma-sync (FlashAttention-2 on mma.sync, every "
           "chip), wgmma (the Hopper kernel on wgmma + TMA, chip=sm_90a, for "
           "head dims that are multiples of 64; others get mma-sync; its "
           "backward kernels too), or auto (the wgmma forward on sm_90a "
           "where warps is 0, 4 or 8, with the mma.sync backward; mma-sync "
           "elsewhere)">,
    Option<"persistent", "persistent", "bool", /*default=*/"false",
           "The dense wgmma forward kernel loops over its tiles, longest "
           "first, so a launch may have fewer CTAs than tiles (sm-count "
           "here; launch.py's grid() with the device's SM count). Off by "
           "default: its key loop is longer in the SASS than the one-tile "
           "kernel's (docs/Design.md)">,
    Option<"smCount", "sm-count", "int64_t", /*default=*/"0",
           "With persistent=1: the SMs of the device the host code will "
           "run on; it launches min(tiles, sm-count x CTAs per SM) CTAs. 0 "
           "(the default): one CTA per tile, as without persistent. Any "
           "grid is correct (CTA c of n takes tiles c, c + n, ...) and the "
           "host code cannot ask the device, so without a count it keeps "
           "the grid that never leaves an SM idle; CTAs start in order, so "
           "the longest tiles still go first. At most 1024; an error "
           "without persistent=1">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
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
    copy is lowered to loops like every other linalg op, and the kernel needs
    no MLIR runtime library. Those loops copy element by element (`llc` does
    not vectorize loops): with `vector-rows=N`, a copy whose rows (innermost
    dimension) are static, unit strided and at most N elements long becomes
    a loop over its rows instead, each row one `vector.transfer_read` and
    `vector.transfer_write` (the CPU pipeline's tile copies: stacked query
    and gate rows, padded key blocks, the loop state's initial values).

    ```mlir
    memref.copy %a, %b : memref<?x32xf32, strided<[32, 1], offset: ?>> to memref<?x32xf32, strided<[32, 1]>>
    // becomes
    linalg.copy ins(%a : ...) outs(%b : ...)
    ```
  }];
  let options = [
    Option<"vectorRows", "vector-rows", "int64_t", /*default=*/"0",
           "Copy rows of static size up to this many elements as vectors "
           "(0: never)">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // GATED_ATTENTION_CONVERSION_PASSES_TD
