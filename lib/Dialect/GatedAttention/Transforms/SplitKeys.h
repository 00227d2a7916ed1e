//===- SplitKeys.h - split-KV partials and their merge ----------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The pieces of split-KV (flash-decoding) on the CPU that the dense op
// (SplitKeys.cpp) and the paged op (PagedOnlineSoftmax.cpp) share: how
// many parts kv-splits=auto takes, the scf.forall that writes the parts'
// partials, and the merge that combines them and applies the gate once.
// The partials are indexed by part, then by the op's row dimensions
// ([B, Hq, Sq] for the dense op, [T, Hq] for the paged one).
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_SPLIT_KEYS_H
#define GATED_ATTENTION_LIB_TRANSFORMS_SPLIT_KEYS_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::gated_attention {

/// The parts kv-splits=auto takes for `tiles` tiles of at most `keys` keys
/// on `threads` threads (Transforms.h): min(ceildiv(threads, tiles),
/// keys / kMinKeysPerSplit, kMaxKeySplits) when the tiles are fewer than
/// the threads, else 1. Folds to a constant when the sizes are.
Value buildAutoKeySplits(OpBuilder &b, Location loc, Value tiles, Value keys,
                         int64_t threads);

/// An scf.forall over `sizes` in `steps` with `outs`, marked as an
/// online-softmax tile grid. Dimensions that run once get no loop
/// dimension (canonicalization would rebuild the forall without them, and
/// without its mapping); `ivs` receives one index per size (0 for those).
scf::ForallOp buildTileForall(OpBuilder &b, Location loc,
                              ArrayRef<OpFoldResult> sizes,
                              ArrayRef<OpFoldResult> steps, ValueRange outs,
                              SmallVectorImpl<Value> &ivs);

/// Unnormalized f32 partials of `splits` parts: out [N, rows..., Dv] and
/// sum, max, sigma [N, rows...] (OnlineSoftmaxTile::Partial per row).
struct KeySplitPartials {
  Value out, sum, max, sigma;
};

/// What the merge applies once to the merged rows.
struct KeySplitGate {
  /// Null without a gate; else read through `map` from the merge's
  /// (rows..., Dv) loops.
  Value input;
  AffineMap map;
  GateFunctionAttrInterface gate;
  CombineKind combine;
};

/// Empty f32 tensors of the partials of `splits` parts of rows `rowSizes`
/// with `valueHeadDim` values each (out, sum, max, sigma).
SmallVector<Value> buildKeySplitScratch(OpBuilder &b, Location loc,
                                        OpFoldResult splits,
                                        ArrayRef<OpFoldResult> rowSizes,
                                        int64_t valueHeadDim);

/// The merge of `parts` (rows `rowSizes`): per row m = max_i m_i,
/// w_i = exp(m_i - m) sigma / sigma_i (buildMergeWeight),
/// combine(sum_i w_i O_i / sum_i w_i l_i, act(G)) written into `dest`
/// ([rows..., Dv], the result's element type; 0 before the gate for a row
/// without keys), and, with `lseDest` ([rows...] f32), the rows'
/// log-sum-exp. Returns the result, then the log-sum-exp if asked.
SmallVector<Value> buildKeySplitMerge(OpBuilder &b, Location loc,
                                      const KeySplitPartials &parts,
                                      Value splits,
                                      ArrayRef<OpFoldResult> rowSizes,
                                      const KeySplitGate &gate, Value dest,
                                      Value lseDest = Value());

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_SPLIT_KEYS_H
