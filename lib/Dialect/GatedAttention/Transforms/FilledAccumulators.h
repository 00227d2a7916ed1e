//===- FilledAccumulators.h - register tiles that start from a fill -*- C++
//-*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// A contraction whose accumulator starts as a constant (`S = Q Kᵀ` starts
// from zeros) reads that constant from a buffer: the fill is shared with the
// loop's other zero-initialized state and defined outside the key loop, so
// bufferization copies it into a fresh buffer every key block (three times
// when a row remainder is split off: the parts and the tensor they are
// inserted into). Here the contraction gets a fill of its own, its register
// tiles start from the constant in registers, and the fill is replaced by an
// uninitialized tensor once no tile reads it. Used by
// gated-attention-vectorize-tiles, in three steps around its own.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_FILLEDACCUMULATORS_H
#define GATED_ATTENTION_LIB_TRANSFORMS_FILLEDACCUMULATORS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir::gated_attention {

/// Before splitting and tiling: gives contraction `op` a fill of its own,
/// marked with `id`, when its init is a fill; else returns null.
linalg::FillOp privatizeInitFill(RewriterBase &rewriter, linalg::LinalgOp op,
                                 int64_t id);

/// Whether `op` is a fill privatizeInitFill made (not vectorized with the
/// other tile ops: it goes, or dropPrivateFills hands it back).
bool isPrivateFill(Operation *op);

/// The id of the private fill whose values `part` (a split-off part of a
/// contraction, before tiling) starts from, if it does rather than from an
/// earlier part's result (the second part of a split reduction).
std::optional<int64_t> startsFromFill(linalg::LinalgOp part);

/// After tiling a part that starts from fill `id` into `loops` (rows, cols,
/// depth): marks the loops so that startFromFill can follow the tile's
/// accumulators to the fill.
void markFilledTile(RewriterBase &rewriter, ArrayRef<LoopLikeOpInterface> loops,
                    int64_t id);

/// The fill id markFilledTile put on `depthLoop`, if any (removed).
std::optional<int64_t> takeFilledMark(Operation *depthLoop);

/// After vectorization and hoisting: the accumulators that `depthLoop`
/// (marked) reads before its first step become the fill's value, and its
/// tile loops' destination an uninitialized tensor. Fails, changing
/// nothing, when the accumulators do not come straight from the fill.
LogicalResult startFromFill(RewriterBase &rewriter, scf::ForOp depthLoop);

/// After vectorization and hoisting, for a tile of a contraction that
/// markSumFromZero marked: `depthLoop`'s vector accumulators start from
/// zero and its results are added to their former start after it, so that
/// the tile sums its depth apart from the value it adds to. Fails, changing
/// nothing, when the loop carries no vector.
LogicalResult sumFromZero(RewriterBase &rewriter, scf::ForOp depthLoop);

/// Last: removes the marks and the private fills that no tile reads any
/// more: those whose id `unstarted` maps to 0 (per fill, the parts that
/// read it, counted as they are tiled, less those startFromFill started;
/// absent: no part was counted, e.g. an untiled contraction). The others
/// are returned, to be tiled and vectorized as other fills.
SmallVector<linalg::FillOp>
dropPrivateFills(RewriterBase &rewriter, Operation *root,
                 const llvm::DenseMap<int64_t, int64_t> &unstarted);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_FILLEDACCUMULATORS_H
