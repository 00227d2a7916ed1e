//===- FragmentSoftmax.h - online softmax on accumulator tiles --*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The flash kernels' online softmax, on score tiles in the accumulator
// layout (FragmentLayout.h): scores in the log2 domain with the scale
// folded in, the mask as -inf, per-row running maximum m and per-lane
// partial row sums l (the quad reduces l once, in the epilogue), and the
// rescaling of O. Atom-independent: mma.sync and wgmma scores alike.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FRAGMENT_SOFTMAX_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FRAGMENT_SOFTMAX_H

#include "FragmentLayout.h"
#include "TileScheduler.h"

namespace mlir::gated_attention::flash {

/// A lane's softmax state, carried through the key loop as the values
/// (m0, m1, l0, l1, o...): per row half the running maximum (log2 domain)
/// and partial sum, then the O accumulator, `valueHeadDim` wide.
class SoftmaxState {
public:
  static constexpr int64_t kNumRowValues = 2 * AccumulatorTile::kRowsPerLane;
  /// The initial values: m = -inf, l = 0, O = 0.
  static SmallVector<Value> init(const KernelBuilder &kb, int64_t valueHeadDim);

  explicit SoftmaxState(MutableArrayRef<Value> values) : values(values) {}

  Value &max(int64_t half) const { return values[half]; }
  Value &sum(int64_t half) const {
    return values[AccumulatorTile::kRowsPerLane + half];
  }
  AccumulatorTile out() const {
    return AccumulatorTile(values.drop_front(kNumRowValues));
  }

private:
  MutableArrayRef<Value> values;
};

/// Scores S (raw Q K^T) to the log2 domain: S * scale * log2(e). With
/// `keyLimits` (one per row half), the key of each column is
/// `firstKey + 8 * tile + column` and keys at or past the row's limit
/// become -inf.
void scaleAndMaskScores(const KernelBuilder &kb, AccumulatorTile scores,
                        double scale, Value firstKey,
                        ArrayRef<Value> keyLimits);

/// Multiplies the lane's O registers of row half `half` by `alpha`.
void rescaleRow(const KernelBuilder &kb, AccumulatorTile out, int64_t half,
                Value alpha);

/// One online-softmax step over a block of scores: updates m and l, turns
/// the scores into P = exp2(S - m) and, with `rescaleOut`, rescales O by
/// alpha = exp2(m_old - m). Returns alpha per row half (for a caller whose
/// O is still being written by a wgmma).
SmallVector<Value, 2> updateSoftmax(const KernelBuilder &kb,
                                    AccumulatorTile scores, SoftmaxState state,
                                    bool rescaleOut = true);

/// The softmax of key block `block` (`keyBlock` keys) for the lane's rows
/// of the warp's 16-row tile at `warpRow`: scale, the mask of `range` when
/// `masked`, then updateSoftmax.
SmallVector<Value, 2> softmaxStep(const KernelBuilder &kb,
                                  const LaneLayout &lanes,
                                  const KeyBlockRange &range, Value warpRow,
                                  Value block, int64_t keyBlock, double scale,
                                  bool masked, AccumulatorTile scores,
                                  SoftmaxState state, bool rescaleOut = true);

/// The normalizer 1 / l of row half `half` (0 for a row that saw no key):
/// reduces the quad's partial sums.
Value rowNormalizer(const KernelBuilder &kb, SoftmaxState state, int64_t half);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FRAGMENT_SOFTMAX_H
