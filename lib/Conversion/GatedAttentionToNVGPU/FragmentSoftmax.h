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

#include <optional>

namespace mlir::gated_attention::flash {

/// A lane's softmax state, carried through the key loop as the values
/// (m0, m1, l0, l1, o...): per row half the running maximum (log2 domain)
/// and partial sum, then the O accumulator, `valueHeadDim` wide. (Unlike
/// the CPU tiles, the sums are not compensated: the tensor cores add each
/// block's P V into O themselves, and at D = 256 no register is left for a
/// compensation of l or O; docs/Design.md states the resulting bound.)
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

/// 2^x on the MUFU unit with denormal results flushed to zero
/// (ex2.approx.ftz.f32): one instruction, where math.exp2 (libdevice's
/// exp2f, exact on denormals) takes four. A weight below 2^-126 of the
/// row's largest is far below the resolution of the row's f32 sum. Within
/// 2 ulp of the correctly rounded result (PTX ISA 9.1, section 9.7.3.21,
/// ex2): 2.5 ulp of 2^x, as gated_attention.accuracy counts it.
Value fastExp2(const KernelBuilder &kb, Value x);

/// 1 / x on the MUFU unit with denormal results flushed to zero
/// (rcp.approx.ftz.f32, within 1 ulp: PTX ISA 9.1, section 9.7.3.13, rcp,
/// which gated_attention.accuracy reads as 1 ulp from the correctly
/// rounded result, 1.5 of 1 / x): one instruction, where the IEEE division
/// takes about eight and a slow-path call.
Value fastReciprocal(const KernelBuilder &kb, Value x);

/// Scores S (raw Q K^T) to the log2 domain, S * scale * log2(e), with
/// `scale` (raw without). With `keyLimits` (one per row half), the key of
/// each column is `firstKey + 8 * tile + column` and keys at or past the
/// row's limit become -inf; without `firstKey` the limits are i32 and
/// relative to the lane's first key (each score one compare with a
/// constant).
void scaleAndMaskScores(const KernelBuilder &kb, AccumulatorTile scores,
                        std::optional<double> scale, Value firstKey,
                        ArrayRef<Value> keyLimits);

/// Multiplies the lane's O registers of row half `half` by `alpha`.
void rescaleRow(const KernelBuilder &kb, AccumulatorTile out, int64_t half,
                Value alpha);

/// One online-softmax step over a block of masked scores: updates m and l,
/// turns the scores into P = exp2(S - m) and, with `rescaleOut`, rescales O
/// by alpha = exp2(m_old - m). Scores are in the log2 domain, or, with
/// `rawScale`, raw, the scale applied in each exponent by one FFMA and the
/// exps taken by fastExp2 (2 instructions a score instead of 6). Returns
/// alpha per row half (for a caller whose O is still being written by a
/// wgmma).
SmallVector<Value, 2> updateSoftmax(const KernelBuilder &kb,
                                    AccumulatorTile scores,
                                    std::optional<double> rawScale,
                                    SoftmaxState state, bool rescaleOut = true);

/// The softmax of key block `block` (`keyBlock` keys) for the lane's rows
/// of the warp's 16-row tile at `warpRow`: scale, the mask of `range` when
/// `masked`, then updateSoftmax; `fast`: on raw scores (the wgmma kernel;
/// the mma.sync kernel keeps the scaled form: at D = 256 its registers are
/// exactly full, and the fast form's schedule spills there,
/// test/Pipelines/ptxas.test). `relativeMask`: the mask takes each row's
/// bound relative to the lane's first key, in i32, once per row, and each
/// score is one compare with a constant (the wgmma kernel; the mma.sync
/// kernels keep their PTX, test/Pipelines/mma-sync-ptx.test).
SmallVector<Value, 2>
softmaxStep(const KernelBuilder &kb, const LaneLayout &lanes,
            const KeyBlockRange &range, Value warpRow, Value block,
            int64_t keyBlock, double scale, bool masked, AccumulatorTile scores,
            SoftmaxState state, bool fast, bool rescaleOut = true,
            bool relativeMask = false);

/// The op's log-sum-exp L of a row (natural log, +inf for a row that saw
/// no key) from the kernels' log2-domain state: its maximum `max` (log2
/// units, the scale folded in) and `sum`, the sum of exp2(s - shift(max))
/// over its keys (reduced over the quad). The kernels keep scores in log2
/// units because exp2 is what the MUFU unit computes (exp would cost a
/// multiply per score); L = ln 2 * shift + log(sum) converts once per row.
/// The split-KV merge gives its combined log2 LSEs and their sum.
Value rowLogSumExp(const KernelBuilder &kb, Value max, Value sum);

/// The normalizer 1 / l of row half `half` (0 for a row that saw no key):
/// reduces the quad's partial sums.
Value rowNormalizer(const KernelBuilder &kb, SoftmaxState state, int64_t half);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FRAGMENT_SOFTMAX_H
