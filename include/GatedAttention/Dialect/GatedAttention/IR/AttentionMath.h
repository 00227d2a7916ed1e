//===- AttentionMath.h - the op's math, one builder per piece ---*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The pieces of gated_attention.attention's semantics that every lowering
// builds (the reference linalg one, the tiled online softmax, the parallel
// rows and the GPU kernels): the bottom-right causal key bound, the softmax
// shift of a row that has seen no key, the row normalizer, and the gated
// output. Each is written once here so that the lowerings cannot disagree
// on an edge case (an empty row, Sq > Skv, a NaN).
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_ATTENTION_MATH_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_ATTENTION_MATH_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"

namespace mlir::gated_attention {

/// The type the op's sums are accumulated in and its log-sum-exp is kept
/// in for inputs of `elementType`: the wider of f32 and the element type
/// (f32 for f16, bf16 and f32; f64 for f64).
FloatType getAccumulatorType(Type elementType);

/// Whether ops on `elementType` accumulate wider than f32 (f64): the tiled
/// and GPU lowerings, whose arithmetic is f32 by construction, refuse them
/// and the reference lowerings take them.
bool needsWideAccumulator(Type elementType);

/// Skv - Sq (index values): the offset of the bottom-right aligned causal
/// mask, under which key j is visible from query row i iff j <= i + offset.
Value buildCausalOffset(OpBuilder &b, Location loc, Value numKeys,
                        Value numRows);

/// row + offset + 1: under the causal mask, the keys visible from query row
/// `row` are those below this bound (and below Skv). Not clamped: callers
/// clamp to [0, Skv] where they use it as a loop bound.
Value buildCausalKeyBound(OpBuilder &b, Location loc, Value row, Value offset);

/// Whether key `key` is visible from query row `row` under the causal mask
/// (key <= row + offset), as an i1.
Value buildCausalVisible(OpBuilder &b, Location loc, Value key, Value row,
                         Value offset);

/// The varlen tile schedule of the paged op's lowerings (GPU CTAs, CPU
/// tiles): with `rows` queries per tile, sequence s's query blocks are tiles
/// floor(cu[s] / rows) + s onwards, a numbering in which the sequences'
/// ranges never overlap (each holds ceildiv(q_s, rows) blocks and at most
/// one idle tile), so ceildiv(T, rows) + B tiles cover T queries in B
/// sequences whatever their lengths. `cuOfS` is cu_seqlens_q[s] (index).
/// Strictly increasing in s.
Value buildVarlenFirstTile(OpBuilder &b, Location loc, Value cuOfS, Value s,
                           int64_t rows);

/// The sequence of tile `tile` under that schedule: the number of sequences
/// s in [1, numSeqs) that start at or before it (independent loads, not a
/// dependent search). `cuAt` loads cu_seqlens_q[s] as an index.
Value buildVarlenTileSequence(
    OpBuilder &b, Location loc, Value tile, Value numSeqs, int64_t rows,
    function_ref<Value(OpBuilder &, Location, Value)> cuAt);

/// The sequence of tile `tile` under that schedule, as
/// buildVarlenTileSequence, found by a binary search over the sequences:
/// log2(numSeqs) dependent loads per tile, so a batch of B sequences costs
/// O(B log B) rather than O(B^2) in all.
Value buildVarlenTileSequenceSearch(
    OpBuilder &b, Location loc, Value tile, Value numSeqs, int64_t rows,
    function_ref<Value(OpBuilder &, Location, Value)> cuAt);

/// How far the reference point m of the online softmax may lag behind the
/// scores (natural log units, 8 ln 2): exponentials are taken as
/// exp(s - m) <= 2^8, and m moves only when a block's maximum exceeds it by
/// more than this, so m moves at most 1 + 2 S+ / threshold times for scores
/// in [-S+, S+], whatever the number of key blocks: the rounding of each
/// rescaling factor exp(m - m') cannot accumulate over the blocks.
inline constexpr double kRescaleThreshold = 5.545177444479562;
/// log2 of exp(kRescaleThreshold): the largest exponential is 2^this.
inline constexpr int64_t kRescaleThresholdLog2 = 8;

/// The reference point m' after a block whose maximum score is `blockMax`
/// (f32 scalars or vectors): blockMax if it exceeds `m` by more than
/// kRescaleThreshold (or m is -inf and blockMax is not), else `m`.
Value buildRunningMax(OpBuilder &b, Location loc, Value m, Value blockMax);

/// One step of compensated (Kahan) summation, f32 scalars or vectors: adds
/// `y` = x - comp to the running sum `sum`, where x is the next term and
/// comp the compensation so far (the amount by which `sum` exceeds the
/// exact sum; callers may form y by accumulating x onto -comp). Returns the
/// new sum t = sum + y and compensation (t - sum) - y (0 where t is
/// infinite, so that an infinite sum stays so, not NaN). The error of n steps
/// is at most (2u + O(n u^2)) sum |x|, not (n - 1) u: summing key blocks
/// this way makes the error independent of their number. Scaling sum and
/// comp by the same factor scales the exact sum.
std::pair<Value, Value> buildCompensatedAdd(OpBuilder &b, Location loc,
                                            Value sum, Value y);

/// An exact power of two sigma <= 1 (f32) by which the weights of the
/// online softmax are scaled so that neither the row sum l nor the
/// accumulator l max|v| can overflow: sigma = 1 unless max|v| * numKeys *
/// 2^kRescaleThresholdLog2 reaches 2^126, then just enough below 1.
/// `maxAbsValue` is max |v| over the keys so far (f32; NaN or inf give the
/// smallest sigma, harmlessly), `numKeys` a bound on their number (index).
Value buildOverflowScale(OpBuilder &b, Location loc, Value maxAbsValue,
                         Value numKeys);

/// Whether values of type `valueType` can reach the range that
/// buildOverflowScale guards against with at most 2^48 keys (f32, bf16:
/// yes; f16: no, so its lowerings need not track max|v|).
bool needsOverflowScale(Type valueType);

/// The shift that exp() subtracts from a row's scores: the running maximum
/// `m` (of the accumulator type), or 0 while the row has seen no visible
/// key (m = -inf), so that the masked scores give exp(-inf) = 0 rather than
/// exp(NaN).
Value buildSoftmaxShift(OpBuilder &b, Location loc, Value m);

/// The biased exponent field of a positive f32 `x` (i32; E + 127 for a
/// normal 2^E m).
Value buildBiasedExponent(OpBuilder &b, Location loc, Value x);

/// exp(x) for an f32 `x` that is at most kRescaleThreshold, -inf or NaN
/// (a weight's argument s - shift(m') or a rescaling's m - m'): 2^n p(r)
/// with n = x log2(e) rounded to nearest (by adding 1.5 * 2^23, whose low
/// bits then hold n and give 2^n by a shift), r = x - n ln 2 (ln 2 in two
/// parts) and Cephes' degree-7 polynomial p (upstream math.exp's
/// coefficients) as one Horner chain: at most 1.26 ulp on [-87, 0].
/// Upstream's expansion also clamps x and n against overflow, which
/// cannot happen here; this underflows to 0 at n <= -127, one select. The
/// CPU's row passes take this instead of math.exp (10 instructions fewer
/// a vector). With `powerOfTwo` (an f32 2^k <= 1: buildOverflowScale's
/// sigma) the result is exp(x) 2^k, k added to 2^n's exponent rather than
/// multiplied in (the per-scale work goes right after `powerOfTwo`'s
/// definition), and 0 where it would be subnormal (n + k <= -127).
Value buildWeightExp(OpBuilder &b, Location loc, Value x,
                     Value powerOfTwo = nullptr);

/// The weight of a part of a row's keys when parts computed separately are
/// merged (split-KV): exp(mPart - shift(m)), where `mPart` is the maximum
/// the part's weights were taken relative to and `m` >= mPart the maximum
/// over the parts merged so far (buildSoftmaxShift: 0 while m = -inf).
/// It scales the part's unnormalized sums (l, P V) and, with mPart the
/// previous running maximum, rescales the merged sums: 0 for a part
/// without a visible key (mPart = -inf), never NaN; 1 for the part that
/// holds the maximum. `base2`: maxima and weights in log2 units (exp2).
/// Every split-KV merge (the GPU's merge kernel, the CPU's split) weighs
/// its parts with this.
Value buildMergeWeight(OpBuilder &b, Location loc, Value mPart, Value m,
                       bool base2 = false);

/// The softmax normalizer of a row from its sum of weights `l` (a scalar of
/// the accumulator type): 1 / l, or 0 for a row that saw no key (l == 0:
/// its output is 0, not NaN). A NaN `l` stays NaN, so NaN inputs are never
/// turned into 0.
Value buildInverseRowSum(OpBuilder &b, Location loc, Value l);

/// The log-sum-exp L of a row (the op's `lse` result) from the shift
/// `shift` its weights exp(s - shift) were taken with and their sum `l`
/// (scalars or vectors of the accumulator type): shift + log(l), or +inf
/// for a row that saw no key (l == 0), so that exp(s - L) = 0 for every key
/// of it. A NaN `l` stays NaN.
Value buildLogSumExp(OpBuilder &b, Location loc, Value shift, Value l);

/// The op's combine of the attention output `y` and the activated gate
/// `act` (f32 scalars or vectors): `y * act` or `y + act`.
Value buildCombine(OpBuilder &b, Location loc, CombineKind kind, Value y,
                   Value act);

/// One output element from the normalized attention output `y` (f32 scalar
/// or vector): combine(y, gate(g)) where `g` (f32, same shape as `y`) is the
/// gate input, or `y` when `g` is null; rounded to `elementType` (the
/// element type of the result, shaped like `y`).
Value buildGatedOutput(OpBuilder &b, Location loc, Value y, Value g,
                       GateFunctionAttrInterface gate, CombineKind combine,
                       Type elementType);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_ATTENTION_MATH_H
