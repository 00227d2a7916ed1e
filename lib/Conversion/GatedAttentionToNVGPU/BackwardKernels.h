//===- BackwardKernels.h - the backward's GPU kernels -----------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// gated_attention.attention_backward on mma.sync, in FlashAttention-2's
// shape (docs/Backward.md derives the math, AttentionBackwardMath.h builds
// it), as three kernels launched in order on [B, H, S, W]-contiguous
// buffers:
//   1. preprocessing (SIMT, coalesced: the lanes of a row take 8 columns
//      each; PreprocessLanes): D = rowsum(dOut * out), dY = dOut * act(G)
//      ("do") and the gate's gradient, summed over the value dim (headwise
//      gate, by shuffles) and the heads (shared gate) in the row's lanes:
//      no atomics;
//   2. dK and dV: a CTA per 64 keys of one K/V head, a warp per 16 keys; it
//      streams the query rows of the head's GQA group (packed (row, head)
//      pairs) and recomputes P^T = exp(scale K Q^T - L), accumulating
//      dV += P^T dY and dK += dS^T Q in registers;
//   3. dQ: a CTA per 64 query rows of one head, a warp per 16 rows, streams
//      the keys and accumulates dQ += dS K in f32 registers.
// dQ has a kernel of its own rather than f32 atomics from kernel 2: every
// run adds the same numbers in the same order (bitwise reproducible) at
// the price of recomputing S and dP.
// With kernel=wgmma on sm_90a, kernels 2 and 3 are warp-specialized wgmma
// kernels of the same math (BackwardWgmmaKernel.h).
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_BACKWARD_KERNELS_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_BACKWARD_KERNELS_H

#include "CpAsyncPipeline.h"
#include "FragmentLayout.h"
#include "KernelInterface.h"

namespace mlir::gpu {
class GPUFuncOp;
} // namespace mlir::gpu

namespace mlir::gated_attention::flash {

/// How the preprocessing kernel spreads rows over its threads: each lane
/// takes kElements consecutive columns of a row (one 16-byte access), a row
/// takes lanesPerRow lanes (Dv / kElements up to a power of two, so that a
/// row's lanes are one aligned group of a warp that xor shuffles stay in;
/// lanes past the row's columns idle) and a CTA rowsPerBlock rows, of
/// headsPerBlock query heads: those that share a gate head (to sum dG over
/// them), one without a gate.
struct PreprocessLanes {
  static constexpr int64_t kElements = 8;
  int64_t headsPerBlock, chunks, lanesPerRow, rowsPerBlock;

  explicit PreprocessLanes(const FlashKernelConfig &cfg);
};

/// Each builds the kernel of `cfg` (its role one of the backward's) into
/// `func`, reading its arguments by name (KernelArguments).
void buildBackwardPreprocessKernel(OpBuilder &b, Location loc,
                                   const FlashKernelConfig &cfg,
                                   gpu::GPUFuncOp func);
void buildBackwardKeyValueKernel(OpBuilder &b, Location loc,
                                 const FlashKernelConfig &cfg,
                                 gpu::GPUFuncOp func);
void buildBackwardQueryKernel(OpBuilder &b, Location loc,
                              const FlashKernelConfig &cfg,
                              gpu::GPUFuncOp func);
/// The sm_90a dK/dV kernel (wgmma, warp specialized;
/// BackwardKeyValueWgmma.cpp).
void buildBackwardKeyValueWgmmaKernel(OpBuilder &b, Location loc,
                                      const FlashKernelConfig &cfg,
                                      gpu::GPUFuncOp func);

/// Where a warp works when cfg.columnSplit warps share each 16-row tile:
/// its tile's first row in the CTA's tile and, per accumulator of `width`
/// columns, its first 16-column chunk and first column.
struct WarpColumns {
  const FlashKernelConfig &cfg;
  Value tileRow, part;

  WarpColumns(const KernelBuilder &kb, const FlashKernelConfig &cfg, Value warp)
      : cfg(cfg), tileRow(kb.mul(kb.div(warp, cfg.columnSplit), 16)),
        part(kb.rem(warp, cfg.columnSplit)) {}

  /// The warp's share of an accumulator `width` columns wide.
  int64_t columns(int64_t width) const { return width / cfg.columnSplit; }
  Value firstChunk(const KernelBuilder &kb, int64_t width) const {
    return kb.mul(part, columns(width) / 16);
  }
  Value firstColumn(const KernelBuilder &kb, int64_t width) const {
    return kb.mul(part, columns(width));
  }
};

/// The query rows that a dK/dV kernel streams past the CTA's keys (from
/// `keyBase`, of K/V head `kvHead`): the rows of the head's GQA group as
/// packed (row, head) pairs, packed row p being query p / G of head
/// G kvHead + p % G, so that one loop covers the group and each block of
/// cfg.keyBlock packed rows is one copy.
struct PackedQueryRows {
  Value batch, firstHead, numRows, lse, delta;
  /// Causal: Skv - Sq (null otherwise).
  Value causalOffset;
  /// Q's and dY's packed slabs.
  GlobalSlab query, grad;
  /// The blocks to stream: [firstBlock, numBlocks), the causal blocks
  /// before the first query that sees `keyBase` skipped.
  Value firstBlock, numBlocks;

  PackedQueryRows(const KernelBuilder &kb, const FlashKernelConfig &cfg,
                  const KernelArguments &args, Value batch, Value kvHead,
                  Value keyBase);
};

/// Whether the mma.sync dK/dV (`keyValue`) or dQ kernel of `cfg` takes
/// the forms that keep fewer registers through its key loop (MmaSyncAtom's
/// splitChunkOffsets; transposedScoreGrads' `firstQueryMask`, causal
/// only): the kernels whose loop state is at least that of the smallest
/// that spilled at 255 registers without them (f32 registers a thread:
/// dK/dV at 112/80 with 8 query to 8 K/V heads, its accumulators and a
/// block's S^T and dP^T, 112, causal or not, with a column split the
/// warp's share of the accumulators; the causal dQ at 128/112 without a
/// column split, its accumulators, 64). Elsewhere the same forms cost
/// some kernels a few registers (ptxas-backward-sweep), so the others keep
/// their PTX.
bool leanLoopState(const FlashKernelConfig &cfg, bool keyValue);

/// P^T and dS^T in place of S^T and dP^T (unscaled; FlashAttention-2's
/// P^T = exp2(scale log2(e) S^T - log2(e) L), dS^T = scale P^T (dP^T - D))
/// in a lane's accumulator tiles whose rows are keys (the lane's first at
/// `keyRow0`) and whose columns are packed query rows of `rows` (the
/// lane's first at `firstColumn`), masked causally; with `firstQueryMask`
/// by 32-bit comparisons with each key row's first visible query.
void transposedScoreGrads(const KernelBuilder &kb, const LaneLayout &lanes,
                          const FlashKernelConfig &cfg,
                          const PackedQueryRows &rows, Value firstColumn,
                          Value keyRow0, AccumulatorTile scores,
                          AccumulatorTile gradP, bool firstQueryMask = false);

/// dS in place of the log2-domain scores (scaleAndMaskScores) of a lane's
/// accumulator tiles whose rows are query rows: P = exp2(S - log2(e) L)
/// with each row half's `lseLog2` and dS = scale P (dP - D) with its
/// `delta`, dP read from `gradP`.
void scoreGrads(const KernelBuilder &kb, AccumulatorTile scores,
                AccumulatorTile gradP, ArrayRef<Value> lseLog2,
                ArrayRef<Value> delta, double scale);

/// The sm_90a dQ kernel (wgmma, warp specialized; BackwardQueryWgmma.cpp).
void buildBackwardQueryWgmmaKernel(OpBuilder &b, Location loc,
                                   const FlashKernelConfig &cfg,
                                   gpu::GPUFuncOp func);

/// Gives ptxas no occupancy target for the mma.sync dK/dV or dQ kernel
/// `func` (`.minnctapersm 1`): its registers are what its live state (the
/// f32 accumulators of its rows, the streamed block's products and the
/// loop's invariant addresses) needs, up to 255. Left to itself ptxas aims
/// at three CTAs of 128 threads an SM (168 registers) where the state
/// nearly fits, and spills loop invariants to get there. The price is
/// occupancy (docs/Backward.md, "Register budget").
void budgetRegistersForLiveState(gpu::GPUFuncOp func);

/// Why `op` has no mma.sync backward, or "".
std::string backwardUnsupportedReason(AttentionBackwardOp op);

/// Why `op` has no sm_90a dK/dV and dQ kernels (then the mma.sync ones
/// run), or "".
std::string backwardWgmmaUnsupportedReason(AttentionBackwardOp op);

/// Adds the pattern that replaces a gated_attention.attention_backward by
/// launches of these kernels (BackwardToNVGPU.cpp); with `wgmma` (sm_90a)
/// the dK/dV and dQ kernels are the wgmma ones where the op fits them.
void populateBackwardToNVGPUPatterns(RewritePatternSet &patterns,
                                     bool wgmma = false);

/// The offset of slab (batch, head) of a [B, heads, rows, width]-contiguous
/// buffer.
Value contiguousSlab(const KernelBuilder &kb, Value batch, Value head,
                     int64_t heads, Value rows, int64_t width);

/// The A fragment (mma.sync m16n8k16) of the 16 x 16 block at (row0,
/// 16 * kk) of a row-major slab of global memory (`base`, rows `rowStride`
/// elements apart), read as element pairs; rows at or past `numRows` are 0.
Fragment loadGlobalFragment(const KernelBuilder &kb, const LaneLayout &lanes,
                            Type elementType, Value buffer, Value base,
                            int64_t rowStride, Value row0, Value numRows,
                            int64_t kk);

/// log2(e) L for the weights exp2(scale log2(e) s - log2(e) L) of a row
/// whose forward log-sum-exp is `lse`; +inf (every weight 0) where `valid`
/// is false or the row saw no key (L = +inf, the forward's, or -inf).
Value lseToLog2(const KernelBuilder &kb, Value lse, Value valid);

/// Writes the lane's rows of a 16-row f32 accumulator tile starting at row
/// `row0` that are below `numRows`, rounded to `elementType`, to a
/// row-major slab (`base`, rows `rowStride` apart).
void storeAccumulatorRows(const KernelBuilder &kb, const LaneLayout &lanes,
                          AccumulatorTile acc, Type elementType, Value buffer,
                          Value base, int64_t rowStride, Value row0,
                          Value numRows);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_BACKWARD_KERNELS_H
