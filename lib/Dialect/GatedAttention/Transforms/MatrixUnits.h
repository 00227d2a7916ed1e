//===- MatrixUnits.h - bf16 tile products on x86 matrix units ---*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The CPU tiles' bf16 contractions (S = Q Kᵀ, O += P V) in the pair-packed
// (VNNI) layout that AVX512-BF16's vdpbf16ps and AMX's tdpbf16ps read: the
// reduction dimension k split into (k/2, 2), the left operand (m, k/2, 2),
// the right operand (k/2, n, 2). Used by gated-attention-vectorize-tiles.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_MATRIXUNITS_H
#define GATED_ATTENTION_LIB_TRANSFORMS_MATRIXUNITS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::gated_attention {

/// What multiplies the bf16 tiles.
enum class MatrixUnits {
  /// Operands widened to f32, vector FMAs.
  FMA,
  /// x86vector.avx512.dot (vdpbf16ps): 16 f32 lanes += 16 bf16 pairs.
  AVX512BF16,
  /// amx.tile_mulf (tdpbf16ps) on tiles of up to 16 rows x 64 bytes,
  /// emitted after bufferization by gated-attention-amx-tiles.
  AMX,
};

/// Parses an option value (`fma`, `avx512-bf16`, `amx`).
std::optional<MatrixUnits> parseMatrixUnits(StringRef name);

/// The result of packBF16Pairs: the pair contraction and the op making its
/// right operand (to be tiled like the other packing ops).
struct PairContraction {
  linalg::GenericOp contraction;
  linalg::GenericOp rhsPack;
  /// The elementwise ops around it (rounding the left operand, scaling the
  /// scores), to be tiled by rows.
  SmallVector<linalg::GenericOp> elementwise;
  /// The elementwise op that computed the f32 left operand, erased when
  /// its rounding to bf16 joined it (as `elementwise`'s op), else null.
  Operation *fusedProducer = nullptr;
};

/// Rewrites a contraction of the tiles (loops (m, n, k), left operand f32
/// or bf16 (m, k), right operand bf16 (n, k) or (k, n), f32 result) into the
/// pair contraction over (m, n, k/2, 2). An f32 left operand becomes bf16: when
/// it is `scale * extf(x)` of a bf16 `x` and the contraction starts from zero
/// (S = Q Kᵀ), `x` is multiplied and the scores are scaled afterwards, so
/// no score loses precision; otherwise it is rounded to bf16 (P before
/// P V, as oneDNN's and the GPU kernels' bf16 products do). Fails (leaving
/// the op) when it does not fit: another element type, odd k.
FailureOr<PairContraction> packBF16Pairs(RewriterBase &rewriter,
                                         linalg::GenericOp op);

/// A (parallel, parallel, reduction, reduction) generic made by
/// packBF16Pairs.
bool isPairContraction(linalg::LinalgOp op);

/// The largest divisor of `size` that is at most `limit`: a tile edge that
/// splits `size` into equal static tiles.
int64_t largestDivisorAtMost(int64_t size, int64_t limit);

/// The AMX limits: a tile holds at most 16 rows of 64 bytes, so 16 f32
/// accumulator columns and 16 pairs of the reduction.
constexpr int64_t kAMXRows = 16;
constexpr int64_t kAMXPairs = 16;
constexpr int64_t kAMXColumns = 16;

/// Register tile sizes (rows, columns, 0, 0) of a pair contraction on AMX:
/// up to 2 x 2 accumulator tiles (with their 2 + 2 operand tiles, AMX's 8
/// tile registers) and the whole reduction, which gated-attention-amx-tiles
/// unrolls with the accumulators held in tile registers.
SmallVector<int64_t> amxRegisterTile(linalg::LinalgOp op);

/// Marks a pair contraction for gated-attention-amx-tiles, which multiplies
/// it on AMX tiles after bufferization (the others become AVX512-BF16 dot
/// products). One that starts from zero (S = Q Kᵀ) is marked as such: its
/// init, a fill of 0, is replaced by the fill's destination, left
/// undefined, and its accumulator tiles start from tilezero instead of
/// loading a buffer zero-filled in a pass of its own. (Discardable
/// attributes, which tiling keeps on the tiled ops: they are clones.)
void markForAMXTiles(RewriterBase &rewriter, linalg::GenericOp op);

/// Whether markForAMXTiles marked `op` (or the op it was tiled from).
bool isForAMXTiles(Operation *op);
bool startsAMXTilesFromZero(Operation *op);

/// Emits a static tile of a pair contraction (left R x P x 2, right
/// P x C x 2, accumulator R x C) as x86vector.avx512.dot ops on R x C/L
/// accumulators of L = 16 (else 8, 4) f32 lanes, reading each right-hand
/// row of 2L values once per pair and each left-hand pair as a 32-bit
/// broadcast; returns the result tensor. Fails when C is not a multiple of
/// 4.
FailureOr<Value> emitAVX512DotTile(RewriterBase &rewriter, linalg::LinalgOp op);

/// The op packing a pair contraction's right operand (packBF16Pairs's
/// rhsPack, a bf16 copy into (P, C, 2) from (C, P, 2) keys or (P, 2, C)
/// values) as a loop over blocks of up to 16 x 16 pairs, each in whole-row
/// vector ops: keys' rows read as 32-bit pairs and transposed (16 x 16 in
/// 64 two-row shuffles), values' rows 2p and 2p + 1 interleaved. Returns
/// the packed tensor. Upstream vectorization of the same copy moves element
/// by element (256-512 extracts and inserts a block), which made bf16
/// functions twice as slow to compile. Fails on other ops.
FailureOr<Value> emitPairPack(RewriterBase &rewriter, linalg::LinalgOp op);

/// Marks each function in `root` that holds pair contractions or their dot
/// products as needing the units' x86 features (`target_features`, which
/// the LLVM lowering keeps): LLVM selects their intrinsics only with them,
/// whatever CPU the code is compiled for.
void requireMatrixUnitFeatures(Operation *root, MatrixUnits units);

/// Rounds f32 vectors to bf16 (arith.truncf, 16k lanes) with vcvtneps2bf16
/// (x86vector) in the functions that requireMatrixUnitFeatures marked:
/// arith-expand would make each 16 values an integer rounding of about ten
/// instructions (P's rounding before P V took 5.6% of a bf16 AMX forward
/// at S 4096), and LLVM selects the instruction for a plain fptrunc only
/// where the feature is on, calling __truncsfbf2 per value elsewhere.
void roundWithAVX512BF16(Operation *root);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_MATRIXUNITS_H
