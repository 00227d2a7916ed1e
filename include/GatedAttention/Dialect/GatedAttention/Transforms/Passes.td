//===- Passes.td - gated_attention transformations ---------*- tablegen -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_TRANSFORMS_PASSES_TD
#define GATED_ATTENTION_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GatedAttentionRaisePass : Pass<"gated-attention-raise"> {
  let summary = "Raise unfused gated attention in linalg on tensors to gated_attention.attention";
  let description = [{
    Finds gated attention written out with upstream ops, as frontend
    lowerings write it, and replaces it by one `gated_attention.attention`
    (which the pipelines then lower to the fused kernels):

    - `S = Q Kᵀ`: a batched contraction (`linalg.batch_matmul`,
      `linalg.generic`, ...) on `[B, H, S, D]` or on heads folded into the
      batch `[B·H, S, D]`, with Kᵀ read through the indexing map or made by
      a `linalg.transpose` of the last two dimensions;
    - an optional scale: an elementwise multiply by (or divide by) a
      constant; without one the op gets `scale = 1.0`;
    - an optional bottom-right causal mask: an elementwise `arith.select`
      of the score or -inf on a comparison of `linalg.index` values
      (`j > i + (Skv - Sq)` masked), or an added constant triangle (0 where
      `j <= i + (Skv - Sq)`, -inf elsewhere; checked element by element);
    - the softmax over the keys: `linalg.softmax` on the last dimension, or
      its decomposition (max reduction, `exp(x - max)`, sum reduction,
      divide);
    - `O = P V`: a batched contraction;
    - the gate: an all-parallel generic `O * act(G)` or `O + act(G)`, where
      `act` (sigmoid `1 / (1 + exp(-x))`, SiLU `x * sigmoid(x)`, NS-sigmoid
      `0.5 + 0.5 * sigmoid(x)`) is in the same body or in an elementwise
      producer of G, and G is read per element or through an ordered
      subset of the identity map that keeps the batch and the rows: without
      the last dimension (a headwise gate, `[B, H, S]` or `[B·H, S]`) and/or
      without the heads (a shared gate, `[B, S, D]` or `[B, S]`); the op
      gets it as `[B, Hq or 1, Sq, Dv or 1]`.

    It works in two steps: the attention chain (Q Kᵀ to P V) becomes the op
    without a gate, then a gate combine using its result is folded in
    (`populateGateFoldingPatterns`). Attention without such a gate (graphs
    gated elsewhere, G2-G5, or not at all) stays the op without its gate
    operand. Gate variants loaded as plugins (`--load-dialect-plugin`, see
    docs/ExtendingGates.md) add folding patterns for their own activations.

    K and V repeated for grouped-query attention (a `linalg.broadcast`, or
    a generic that is one, to `[B, Hkv, R, S, D]` collapsed to
    `[B, Hkv·R, S, D]`) are read at their `Hkv` heads. Constant factors on
    Q, on K (before or after its transpose) and on the scores multiply into
    the scale (torch-mlir scales Q and Kᵀ by sqrt(scale) each); the causal
    mask may also be added (`s + select(cond, 0, -inf)`) with the
    comparison any linear form of the indices (`j - i <= 0`); torch's guard
    for rows that see no key (`select(all(s == -inf), 0, p)`) is absorbed,
    since the op gives such rows 0. torch's `is_causal` is top-left
    aligned: it is the op's mask only when Sq == Skv, and is not raised
    otherwise.

    What does not match as written is tried again on a copy of each
    function rewritten by the patterns of `--gated-attention-normalize`
    (heads folded into the batch around contractions, keepdim unit dims,
    masks built from iotas, the attention output transposed and reshaped
    before its gate, activations split over generics); the copy replaces
    the function only if it raised more, so IR without attention comes out
    as it went in. Anything else (a softmax over another dimension, a mask
    that is not the causal one, a gate computed from the scores, ...) is
    left as it is; so is a chain whose scores or probabilities have uses
    outside it (raising would compute the attention twice). The replaced ops
    become dead and fold away.

    ```mlir
    %s = linalg.batch_matmul ins(%q, %kt ...) ...
    %p = linalg.softmax dimension(2) ins(%s ...) ...
    %o = linalg.batch_matmul ins(%p, %v ...) ...
    %y = linalg.generic {...} ins(%o, %g ...) { ... 1 / (1 + exp(-g)) ... }
    // becomes
    %y = gated_attention.attention %q4, %k4, %v4, %g4 {scale = 1.0 : f32}
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gated_attention::GatedAttentionDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GatedAttentionNormalizePass : Pass<"gated-attention-normalize"> {
  let summary = "Rewrite frontend spellings of attention towards the form raising matches";
  let description = [{
    The rewrites `--gated-attention-raise` applies (to a copy of each
    function, kept only when it raised something) before matching, as a
    pass of its own to see what they make of a graph:

    - a contraction over heads folded into the batch (`[B·H, M, K]`, e.g.
      a `linalg.batch_matmul` between a `tensor.collapse_shape` and a
      `tensor.expand_shape` of the heads, as torch-mlir lowers SDPA)
      becomes a 4-D `linalg.generic` contraction over `[B, H, ...]`, and
      the reshapes cancel;
    - a transpose that moves static unit dims (torch's einsum pads its
      operands to 5-D with them) transposes the other dims between
      reshapes, which cancel with those around it; an expand that restores
      the groups a collapse merged, around a transpose, is a transpose of
      the uncollapsed value (Kᵀ on `[B·H, S, D]` becomes one of K);
    - a static unit dimension a `linalg.generic` reads or writes through
      the constant index 0 (torch's keepdim reductions `[..., 1]`, their
      broadcasts, a headwise gate `[B, H, S, 1]`) is dropped: the operand
      collapsed, the result expanded back for its users;
    - producers computed only from constants and `linalg.index` (a causal
      mask built from iotas) are fused into their users, splat operands
      folded to scalars; so is one-input elementwise code used once by
      elementwise code (torch's SiLU, `x * sigmoid(x)`, in two generics);
    - a collapse or a transpose of a contraction's result feeding an
      elementwise combine moves below it (HF transformers reshapes SDPA's
      output to `[B, S, H·D]` before the gate);
    - results and operands nobody uses are erased (torch's max reduction
      also computes an argmax);
    - the tensor, linalg and arith canonicalizations.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GatedAttentionUnpagePass : Pass<"gated-attention-unpage"> {
  let summary = "Lower gated_attention.paged_attention to one dense gated_attention.attention per sequence";
  let description = [{
    Rewrites each `gated_attention.paged_attention` into a loop over the
    batch's sequences: for sequence `b`, its `q_b` queries (rows
    `[cu_seqlens_q[b], cu_seqlens_q[b + 1])`) become a `[1, Hq, q_b, D]`
    query, its `seq_lens[b]` keys and values are read through the block
    table (key `j` from slot `j mod P` of page `block_table[b, j / P]`)
    into `[1, Hkv, seq_lens[b], D]` tensors, and one
    `gated_attention.attention` with the op's attributes computes its rows
    of the result (bottom-right causal with `Sq = q_b`, `Skv = seq_lens[b]`
    is the paged op's per-sequence rule). Only the keys a sequence has are
    read: slots past its length and pages outside its table, garbage or
    NaN in real caches, never reach the result. Rows that no sequence
    covers are 0.

    The reference CPU pipeline (`reference=1`) and the PTX pipeline (for
    the paged ops its tensor-core kernel does not take) run it; the tiled
    CPU pipeline reads the pages in place instead (`gated-attention-tile`).

    ```mlir
    // Before:
    %o = gated_attention.paged_attention %q, %kc, %vc, %table, %lens, %cu {causal}
        : (...) -> tensor<?x16x256xf32>
    // After (schematically):
    %o = scf.for %b = %c0 to %B step %c1 iter_args(%acc = %zeros) -> ... {
      %qb = ... extract_slice + transpose of %q to [1, 16, q_b, 256]
      %kb = scf.forall (%j) in (%len) ... row %j: %kc[%table[%b, %j / P], %j mod P]
      %y = gated_attention.attention %qb, %kb, %vb {causal} : ...
      %r = tensor.insert_slice (transpose of %y) into %acc[...]
      scf.yield %r
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def GatedAttentionTilePass : Pass<"gated-attention-tile"> {
  let summary = "Tile gated_attention ops into the fused online-softmax (FlashAttention-2) form";
  let description = [{
    Rewrites every `gated_attention.attention` into:

    - an `scf.forall` over `(B, Hq / R, ceildiv(Sq, query-block / R))`
      (R = Hq / Hkv), made by tiling the op through its `TilingInterface`
      (tile `1 x R x query-block / R`): the R query heads of a GQA group
      share one query tile of about `query-block` rows (FlashAttention-3's
      "pack GQA"), so each K/V block is read once per group;
    - in each tile, the online softmax: a sequential `scf.for` over blocks of
      `key-block` keys carrying the running row max `m`, row sum `l` and the
      f32 accumulator `acc`; per block `S = Q_blk K_blkᵀ` (the scale is folded
      into the f32 query tile once), `m' = max(m, rowmax S)`,
      `P = exp(S - m')`, `l = exp(m - m') l + rowsum P`,
      `acc = exp(m - m') acc + P V_blk`;
    - an epilogue `out = combine(acc / l, act(G_blk))` (0 where `l = 0`)
      converted to the element type and inserted into the result once.

    Key blocks come in two loops: blocks every row of the tile sees in full
    (no mask code), then the blocks that cross the causal diagonal or the end
    of the keys (masked with `linalg.index` arithmetic; the last is padded to
    `key-block` keys). Blocks above the diagonal are never visited. Under the
    causal mask the diagonal takes blocks of `diagonal-key-block` keys (a
    divisor of `key-block`): a third loop, between the two, over the whole
    ones row 0 sees, then the masked loop in that size, so a row computes
    fewer masked keys past its last. Blocks of 256 keys or more are followed
    by at most one whole block of half as many, and the masked blocks (or,
    causal, all the diagonal's) take that half size: the last block pads no
    more than with half-length blocks. `diagonal-key-block=0` chooses half the
    tile's rows per head rounded down to a power of two, at least 32 (the
    key block itself where that does not divide it): Qwen3-Next's 8 stacked
    heads of 32 rows take 32 keys (1.03-1.07x on one Zen 4 thread), a tile
    of 256 rows of one head keeps its 128-key blocks. K and V
    tiles are slices of head `h / (Hq / Hkv)`, never copies per query head.
    Tiles are padded to static `query-block x D`, `key-block x D` shapes so
    that they vectorize; rows past `Sq` are computed and dropped.
    `query-block=0` and `key-block=0` (the defaults) choose per op: blocks of
    128 keys (256 for 16-bit types: the same bytes) and tiles of 256 rows,
    which ran 1.06-1.12x as fast as 64 x 64 on one core (256 bf16 keys
    1.01-1.09x as fast as 128 on an AMX Xeon), halved (to 64 at least) where they would compute more than
    1/8 more padded rows or keys than 64 would, or leave fewer than 4 tiles
    per thread (`threads`). Static sizes take 512 rows over 256 keys where
    those rules hold for them and, causal, `Skv` is at least 64 keys for
    each row per head (1.03-1.12x on an AMX Xeon without a mask; the causal
    diagonal costs more in longer tiles). A dynamic `Skv` takes 128 keys
    (256 for 16-bit types); a dynamic `Sq` counts its tiles as if it were 1024 and takes at most
    128 rows per head
    (so at most 127 padded ones). The paged op keeps 64 x 64. A tile
    never has more rows per head than a static `Sq` (a decode step compiled
    for `Sq = 1` computes one row per head, not `query-block / R`); with `Sq`
    dynamic each tile also has a one-row-per-head version, taken by a tile
    of one row (a decode step; an `scf.if` inside the tile, so the
    `scf.forall` still writes the op's destination).

    ```mlir
    %o = gated_attention.attention %q, %k, %v, %g {causal} : ...
    // becomes
    %o = scf.forall (%b, %h, %i) = (0, 0, 0) to (1, 8, 128) step (1, 4, 16)
        shared_outs(%out = %init) -> (tensor<1x8x128x64xf32>) {
      ... scf.for %kb = %c0 to %unmasked step %c64 iter_args(%m, %l, %acc) ...
      ... scf.for %kb = %unmasked to %end step %c64 iter_args(%m, %l, %acc) ...
      ... epilogue, tensor.parallel_insert_slice ...
    }
    ```

    and every `gated_attention.paged_attention` into one `scf.forall` over
    `(ceildiv(T, R') + B, Hq / R)` tiles of the packed batch (R' =
    `query-block / R` rows per head) with the same tile math, the GPU
    kernel's varlen schedule: sequence `b`'s query blocks are tiles
    `floor(cu[b] / R') + b, ...`, a tile finds its sequence by counting the
    sequences that start at or before it (a tile past its sequence's
    queries is idle and reads no key), so sequences run in parallel and one
    compile serves every batch. Key blocks are read in place from the
    pages: a slice of one page when `key-block` divides `P`, else pieces of
    `gcd(P, key-block)` keys (each within one page) assembled into the
    block; only keys below `seq_lens[b]` are looked up, so garbage slots and
    table entries cannot reach the result. A tile with at most one query
    (decode) computes one row per head instead of R' (an `scf.if`).
    Bottom-right causal per sequence: tile row `r` is local query `i0 + r`,
    visible keys `j <= i0 + r + seq_lens[b] - q_b`.

    Split-KV (`kv-splits`): when the tiles are fewer than the
    threads (a decode step of one sequence), the keys each tile sees are
    split into N parts of whole key blocks. One `scf.forall` over
    `(N, B, Hq / R, query blocks)` writes each part's unnormalized f32
    partials (`O_i`, `l_i`, the reference point `m_i`, the overflow scale)
    into scratch; a merge then computes
    `O = sum_i w_i O_i / sum_i w_i l_i` with `w_i = exp(m_i - max_i m_i)`
    (0 for a part that saw no key) and applies the gate once, and the
    log-sum-exp from the merged `m`, `l`. `kv-splits=N` always splits into
    N parts; `auto` splits into
    `min(ceildiv(threads, tiles), Skv / 256, 64)` parts when the tiles are
    fewer than `threads`, decided at compile time when the sizes are static
    and at run time otherwise (both forms are built; the unsplit tiles run
    over batches `[0, B)` or none, the split over the others). The paged
    op's partials are `[N, T, Hq(, Dv)]`, indexed by query token (its tile
    count is data dependent): one `scf.forall` over `(N, tiles, Hq / R)`,
    the same merge over `(T, Hq)`; `auto` counts the tiles that can hold
    queries (`min(T, ceildiv(T, R') + B)` per head group) and the longest
    sequence for `Skv`, always at run time.

    ```mlir
    // B = 1, Hq 8 over Hkv 2, Sq = 1: 2 tiles; kv-splits=4
    %p:4 = scf.forall (%s, %h) = (0, 0) to (4, 8) step (1, 4)
        shared_outs(...) -> (tensor<4x1x8x1x64xf32>, ...) {
      ... scf.for %kb = %begin to %unmasked step %c64 ...  // part %s's keys
    }
    %m = linalg.generic ... maximumf ...            // max_i m_i
    %o = linalg.generic ... exp(m_i - m) O_i ...    // the merge, the gate
    ```
  }];
  let options = [
    Option<"queryBlock", "query-block", "int64_t", /*default=*/"0",
           "Query rows per tile (Bq); 0: chosen per op (see above)">,
    Option<"keyBlock", "key-block", "int64_t", /*default=*/"0",
           "Keys per block of the online-softmax loop (Bk); 0: chosen per "
           "op (see above)">,
    Option<"diagonalKeyBlock", "diagonal-key-block", "int64_t",
           /*default=*/"0",
           "Keys per block on a causal tile's diagonal, a divisor of "
           "key-block (0: chosen per op, see above; the paged op's tiles "
           "keep key-block)">,
    Option<"kvSplits", "kv-splits", "std::string", /*default=*/"\"1\"",
           "Split each tile's keys into parts computed in parallel: "
           "1 (off), N (1 to 64 parts), or auto (by the threads and tiles)">,
    Option<"threads", "threads", "int64_t", /*default=*/"0",
           "Threads that run the tiles, for kv-splits=auto (0: this host's)">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GatedAttentionTileBackwardPass : Pass<"gated-attention-tile-backward"> {
  let summary = "Lower gated_attention.attention_backward to the tiled FlashAttention-2 backward";
  let description = [{
    Rewrites every `gated_attention.attention_backward` (shapes as the op:
    `query B x Hq x Sq x D`, `key B x Hkv x Skv x D`, `value B x Hkv x Skv x
    Dv`, R = Hq / Hkv) into three `scf.forall` loops on static tiles (rows
    and keys padded to `query-block`, `key-block`; rows past `Sq`, keys past
    `Skv` masked), marked like the forward's online-softmax loops so that
    `gated-attention-vectorize-tiles` register-tiles their contractions:

    1. preprocessing over `(B, Hq, ceildiv(Sq, query-block))`: the
       log-sum-exp `L` (the `lse` operand, or recomputed by a key loop
       carrying the row max and sum), `Y = P V` for the gates whose backward
       needs it (SiLU, `combine = add`), `dY`, `D = rowsum(dY * Y)` (or
       `rowsum(dOut * out)`) and the gate's gradient, per row in f32;
    2. dK, dV over `(B, Hkv, ceildiv(Skv, key-block))`: per key block, the
       R query heads of its group and their query blocks looped
       sequentially (causal: from the first row that sees the block),
       `P = exp(scale Q Kᵀ - L)` recomputed, `dS = scale P (dY Vᵀ - D)`,
       `dK += dSᵀ Q` and `dV += Pᵀ dY` in f32 tiles: the group's sum without
       a race;
    3. dQ over `(B, Hq, ceildiv(Sq, query-block))`: the key blocks looped
       (causal: up to the last one the block sees), `P` and `dP`
       recomputed, `dQ += dS K`. A second pass rather than dQ partials per
       key block: each row of dQ is written by one iteration (no atomics,
       deterministic), at the cost of two more products per block.

    No `Sq x Skv` tensor exists. A shared gate's gradient is summed over the
    heads after the preprocessing.

    `matrix-units` (what `gated-attention-vectorize-tiles` multiplies bf16
    tiles with; `--gated-attention-to-llvm` passes the same): with
    `avx512-bf16` or `amx`, a bf16 op's five products take bf16 operands for
    the pair products, `dY` stored in bf16, `P` and `dS` rounded (torch's
    bf16 backward and the GPU kernels round the same operands); with `fma`
    they keep f32 operands (only `Sᵀ = K Qᵀ` reads the bf16 Q, an exact
    product). f32 and f16 ops are the same under every value.

    ```mlir
    %dq, %dk, %dv = gated_attention.attention_backward %q, %k, %v, %o, %do
        {causal} : (...) -> (...)
    // becomes
    %rows:3 = scf.forall (%b, %h, %i) in (%B, 8, %nq) shared_outs(...)
    %kv:2 = scf.forall (%b, %kh, %j) in (%B, 2, %nk) shared_outs(...) {
      scf.for %r = %c0 to %c4 step %c1 iter_args(%dk, %dv) {
        scf.for %row = %first to %Sq step %c64 iter_args(...) { ... }
      } ...
    }
    %dq = scf.forall (%b, %h, %i) in (%B, 8, %nq) shared_outs(...) {
      scf.for %key = %c0 to %end step %c64 iter_args(%acc) { ... }
    }
    ```
  }];
  let options = [
    Option<"queryBlock", "query-block", "int64_t", /*default=*/"64",
           "Query rows per tile (Bq); 0: 64">,
    Option<"keyBlock", "key-block", "int64_t", /*default=*/"64",
           "Keys per tile (Bk); 0: 64">,
    Option<"matrixUnits", "matrix-units", "std::string", /*default=*/"\"fma\"",
           "What multiplies bf16 tiles (as gated-attention-vectorize-tiles): "
           "with avx512-bf16 or amx a bf16 op's five products take bf16 "
           "operands (dY, P and dS rounded to bf16, as torch's and the GPU "
           "kernels' are); with fma f32 operands, but for the bf16 Q of "
           "Sᵀ = K Qᵀ (exact products)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GatedAttentionVectorizeTilesPass
    : Pass<"gated-attention-vectorize-tiles"> {
  let summary = "Vectorize the static tile math of the online-softmax form for CPUs";
  let description = [{
    Runs after `gated-attention-tile`, on tensors, on every `linalg.generic`
    and `linalg.fill` with static shapes inside an `scf.forall` whose
    mapping the tiling passes made `#gated_attention.tile` (the tiles;
    other code is left alone):

    1. The right operand of each contraction is packed once per block into
       an f32 `k x n` tile by a `linalg.generic`: transposed for `S = Q Kᵀ`,
       extended for f16/bf16 `V`, copied for f32 `V`, so that the
       register-tiled contraction reads it along rows, at a static stride,
       from a buffer just written, and converts nothing in its inner loop.
    2. Register tiling: contractions to `register-rows x register-cols`
       output tiles and `register-depth` reduction steps (unrolled) per
       iteration, row-wise ops to one row, packing ops to 16 x 16. Rows,
       columns or reduction steps the tile does not divide are split off
       into a remainder tile of their own size first, so that every tile
       stays static.
    3. `linalg::vectorize`, then upstream vector lowerings: contractions to
       outer products (FMAs), transposes and multi-reductions, and
       `math.exp` to its polynomial approximation so that it stays a vector
       operation (LLVM would otherwise call `expf` per lane). A
       contraction's reduction loop carries its accumulators as vectors
       (upstream's loop-invariant subset hoisting) rather than storing
       and reloading them every `register-depth` steps. A contraction
       whose init is a `linalg.fill` starts its tiles from the fill's
       value in registers and writes into a `tensor.empty` (a shared fill
       would be copied into a fresh buffer every key block); without a
       reduction loop (`register-depth=0`) its tiles read a fill of its
       own.

    With `matrix-units=avx512-bf16`, a contraction whose right operand is
    bf16 is multiplied in bf16 pairs instead (the VNNI layout: the reduction
    dimension k as k/2 x 2): the left operand in bf16 (for `S = Q Kᵀ` the
    bf16 queries themselves, the scale then applied to the scores; `P`
    rounded to bf16 by the elementwise op computing it, which keeps its f32
    result for the row sums), the right one packed to `k/2 x n x 2`, each
    register tile emitted as `x86vector.avx512.dot` (vdpbf16ps) on 16-lane
    f32 accumulators; the function gets the `target_features` the
    instruction needs, and its tiles round f32 vectors to bf16 with
    `x86vector.avx512.cvt.packed.f32_to_bf16` (vcvtneps2bf16). f32
    contractions stay FMAs whatever `matrix-units` says. With
    `matrix-units=amx` the pair contraction is tiled to up to
    32 x 32 outputs over the whole reduction and left as a `linalg.generic`
    for `gated-attention-amx-tiles`, which multiplies it from memory after
    bufferization.

    The result is still on tensors; bufferization and the LLVM lowering
    follow in `--gated-attention-to-llvm`.

    ```mlir
    // before: linalg.generic {iterator_types = ["parallel", "parallel",
    //   "reduction"]} ins(%q, %k : tensor<64x128xf32>, tensor<64x128xf32>) ...
    // after:  scf.for loops over 8 x 32 output tiles of vector.fma on
    //   vector<32xf32> rows, reading a packed 128 x 64 transposed K tile.
    ```
  }];
  let options = [
    Option<"registerRows", "register-rows", "int64_t", /*default=*/"8",
           "Rows of a contraction's register tile">,
    Option<"registerCols", "register-cols", "int64_t", /*default=*/"32",
           "Columns of a contraction's register tile (vector width)">,
    Option<"registerDepth", "register-depth", "int64_t", /*default=*/"32",
           "Reduction steps per unrolled contraction (0: the whole reduction)">,
    Option<"matrixUnits", "matrix-units", "std::string", /*default=*/"\"fma\"",
           "What multiplies bf16 tiles: fma (widened to f32), "
           "avx512-bf16 (x86vector.avx512.dot on bf16 pairs) or amx (pair "
           "contractions left for gated-attention-amx-tiles)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::x86vector::X86VectorDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

def GatedAttentionAMXTilesPass
    : Pass<"gated-attention-amx-tiles", "::mlir::ModuleOp"> {
  let summary = "Multiply the bufferized bf16 pair contractions on AMX tiles";
  let description = [{
    Runs after bufferization on the pair contractions that
    `gated-attention-vectorize-tiles` left under `matrix-units=amx`: a
    `linalg.generic` on memrefs with the left operand `m x k/2 x 2`, the
    right one `k/2 x n x 2` (bf16 pairs, the VNNI layout) and an f32
    `m x n` accumulator. Each becomes `amx` ops: accumulator tiles of up to
    16 x 16 f32, 2 x 2 at a time (with 2 left and 2 right operand tiles,
    the 8 tile registers), each loaded once, multiplied by `amx.tile_mulf`
    (tdpbf16ps) over the whole reduction in steps of up to 16 pairs (a
    64-byte tile row), stored once. The tile edges are the largest
    divisors of `m`, `n` and `k/2` within those limits, so every static
    shape is covered. `convert-vector-to-llvm{enable-amx}` then emits the
    LLVM intrinsics, from whose static shapes the X86 backend writes the
    tile configuration (`ldtilecfg`).

    A module where a contraction was converted also gets a load-time
    constructor (`llvm.mlir.global_ctors`) that asks Linux for the AMX tile
    data state (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`);
    where it is refused it writes an error naming AMX and exits with 1
    instead of faulting on the first tile instruction.

    ```mlir
    // before: linalg.generic {iterator_types = ["parallel", "parallel",
    //   "reduction", "reduction"]} ins(%p, %v : memref<32x32x2xbf16, ...>,
    //   memref<32x32x2xbf16>) outs(%o : memref<32x32xf32, ...>)
    // after:  4 amx.tile_load of the accumulators; per 16 pairs 2 + 2
    //   operand tiles and 4 amx.tile_mulf; 4 amx.tile_store.
    ```
  }];
  let dependentDialects = [
    "::mlir::amx::AMXDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def GatedAttentionTileResultsInPlacePass
    : Pass<"gated-attention-tile-results-in-place", "::mlir::ModuleOp"> {
  let summary = "Compute tile results in the tile grid's output";
  let description = [{
    Runs just before upstream's `eliminate-empty-tensors` and does its work
    for the `tensor.parallel_insert_slice`s that end `scf.forall` tile
    grids, first. A tile writes its result piece by piece (one query head
    of a stacked GQA group, or the whole tile) into a `tensor.empty`, which
    the grid's terminator inserts into the grid's output. Upstream walks
    the insertions innermost first: the first piece's empty is replaced by
    a slice of the tile's empty result, and only then is that result
    replaced by a slice of the output, so the first piece was computed in a
    scratch buffer and copied (every tile of an ungrouped head, the first
    head of a grouped one). With the terminators' empties replaced first,
    every piece is computed in its place in the output. Uses upstream's
    `bufferization::eliminateEmptyTensors` on the terminators, with the
    same One-Shot analysis as the upstream pass.

    First, a `tensor.empty` used in several blocks gets a copy for each use
    outside the first use's block. The two versions of a tile (all its
    rows, or the rows left at the end of the sequence: two branches of an
    `scf.if`) insert into one empty; upstream replaces it for one version
    only, and which one changed from run to run, so the same input compiled
    to different code, one version computing into a scratch buffer and
    copying it (test/Pipelines/deterministic.test).

    ```mlir
    // before: %r = tensor.empty(); %h0 = linalg.generic outs(%e0) ...
    //   %t = tensor.insert_slice %h0 into %r ... (more heads)
    //   scf.forall.in_parallel { tensor.parallel_insert_slice %t into %out }
    // after:  %r = tensor.extract_slice %out[...]; the heads' empties then
    //   become slices of %r in eliminate-empty-tensors.
    ```
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GatedAttentionTilesToOpenMPPass : Pass<"gated-attention-tiles-to-openmp"> {
  let summary = "Run the CPU tile grids on OpenMP threads, longest tiles first";
  let description = [{
    Runs before `convert-scf-to-openmp` on the `scf.parallel` loops that
    carry a `#gated_attention.tile` mapping (the tile grids of
    `gated-attention-tile`, `-tile-backward` and the paged op, after
    `scf-forall-to-parallel`). Each becomes an `omp.parallel` around an
    `omp.wsloop` with `schedule(dynamic)`, the grid's loops collapsed, and
    the body in a `memref.alloca_scope`: threads take one tile at a time
    instead of upstream's static, equal counts of tiles per thread. Loops
    whose mapping is `growing` (the query blocks under a causal mask, which
    see more keys the later they are) run last to first, so the tiles that
    end the grid are the shortest of its last (batch, head) and the threads
    finish together. The loop order stays (batch, head, query block): the
    threads read one head's keys at the same time (making the query blocks
    outermost, longest first across all heads, ran 4% slower on
    Qwen3-Next's two heads on two threads). Under a static schedule the thread holding a causal grid's last
    query blocks does up to twice the mean work (one batch and KV head on
    two threads: a quarter of the work against three quarters). Other
    `scf.parallel` loops are left to `convert-scf-to-openmp`; grids inside
    a grid's tile run in the tile's thread.

    ```mlir
    scf.parallel (%b, %h, %q) = (%c0, %c0, %c0) to (%c1, %c2, %c1024)
        step (%c1, %c1, %c64) { ... }
        {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>,
                    #gated_attention.tile<2, growing>]}
    // becomes
    omp.parallel {
      omp.wsloop schedule(dynamic) {
        omp.loop_nest (%b, %h, %k) : index = (%c0, %c0, %c0)
            to (%c1, %c2, %c16) step (%c1, %c1, %c1) collapse(3) {
          // %q = (16 - 1 - %k) * 64
          memref.alloca_scope { ... }
          omp.yield
        }
      }
      omp.terminator
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::omp::OpenMPDialect"
  ];
}

def GatedAttentionGpuLoopMappingsPass
    : Pass<"gated-attention-gpu-loop-mappings"> {
  let summary = "Check the mappings of parallel loops before the GPU mapping";
  let description = [{
    Runs in `gated-attention-to-ptx` before `gpu-map-parallel-loops`.
    Upstream's `convert-parallel-loops-to-gpu` reports an `scf.parallel`
    whose `mapping` is not GPU processor mappings as an error without
    failing: the loop would run sequentially on the host and the pipeline
    succeed after printing an error. A CPU tile grid's mapping
    (`#gated_attention.tile`) is dropped, so the loop is mapped to blocks
    and threads like any other; any other mapping that is not
    `#gpu.loop_dim_map` entries is an error that fails the pass.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // GATED_ATTENTION_TRANSFORMS_PASSES_TD
