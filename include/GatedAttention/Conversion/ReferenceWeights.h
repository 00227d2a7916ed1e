//===- ReferenceWeights.h - the reference lowerings' softmax ----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// What the reference lowerings of gated_attention.attention and
// gated_attention.attention_backward share: the [B, Hkv, R, S, X] layout of
// the query-side tensors and the materialized softmax weights in it, so the
// backward differentiates exactly the weights the forward's oracle uses.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_REFERENCE_WEIGHTS_H
#define GATED_ATTENTION_CONVERSION_REFERENCE_WEIGHTS_H

#include "mlir/IR/Builders.h"

namespace mlir::gated_attention {

/// Splits dim 1 (Hq) of a [B, Hq, S, X] tensor into [B, Hkv, R, S, X] (or
/// of a [B, Hq, S] one, the log-sum-exp, into [B, Hkv, R, S]), the layout in
/// which key and value heads are read through indexing maps.
Value splitQueryHeads(OpBuilder &b, Location loc, Value t, int64_t numKVHeads,
                      int64_t groupSize);

/// `x` (an element loaded in a linalg body) extended to the accumulator type
/// `acc`, or itself when it has that type.
Value extendTo(OpBuilder &b, Location loc, Type acc, Value x);

/// A tensor of `sizes` x `type` (a float type) filled with `value`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Type type, double value);

/// The unnormalized softmax weights of the reference lowerings, in the
/// accumulator type (getAccumulatorType: f32, or f64 for f64 inputs)
/// [B, Hkv, R, Sq, Skv]: exp(s - m) with s = scale * Q K^T (accumulated in
/// that type; -inf where the bottom-right causal mask hides a key) and m
/// the row maximum (0 in a row that sees no key, whose weights are 0); and
/// their row sums l and maxima m (-inf in a row that sees no key),
/// [B, Hkv, R, Sq]; and the scores s themselves.
struct ReferenceWeights {
  Value exps;
  Value rowSum;
  Value rowMax;
  Value logits;
};

/// Builds them from the query split to [B, Hkv, R, Sq, D] and the key
/// [B, Hkv, Skv, D]; `rowSizes` are B, Hkv, R, Sq and `numKeys` Skv, sizes
/// the caller has from its operands.
ReferenceWeights buildReferenceWeights(OpBuilder &b, Location loc,
                                       Value splitQuery, Value key,
                                       ArrayRef<OpFoldResult> rowSizes,
                                       OpFoldResult numKeys, bool causal,
                                       double scale);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_CONVERSION_REFERENCE_WEIGHTS_H
