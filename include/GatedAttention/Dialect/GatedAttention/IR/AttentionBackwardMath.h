//===- AttentionBackwardMath.h - the backward's math, once ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The pieces of gated_attention.attention_backward's semantics that every
// lowering of it builds, beside AttentionMath.h's forward pieces: what the
// backward reads to get the gate's gradient and the softmax's row term
// D = rowsum(dO * Y), the attention output's gradient dO, the gate's
// gradient and the score gradient. docs/Backward.md derives them.
//
// Notation (one query row, f32): Y the ungated attention output, s =
// act(G), out = combine(Y, s) the saved gated output (element type), dOut
// its gradient, P the softmax weights.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_ATTENTION_BACKWARD_MATH_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_ATTENTION_BACKWARD_MATH_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"

namespace mlir::gated_attention {

/// Whether the backward of an op with this gate (null: no gate) and combine
/// needs the ungated attention output Y, which it then recomputes from the
/// weights (Y = P V), rather than reading everything it needs from the saved
/// output `out`:
///   - no gate: out = Y, so D = rowsum(dOut * out). No.
///   - mul, a gate with a bounded act'/act (sigmoid, NS-sigmoid):
///     D = rowsum(dOut * out) and dG = dOut * out * act'/act(G). No.
///   - mul, a gate without one (SiLU: act(0) = 0, where out = 0 whatever Y
///     was): Y cannot be recovered from out. Yes.
///   - add: Y = out - act(G) cancels where |act(G)| >> |Y| (the rounding of
///     out, u |act(G)|, against |Y|). Yes.
bool backwardRecomputesOutput(Attribute gate, CombineKind combine);

/// The gradient of the ungated attention output from the gradient `dOut` of
/// the gated one (f32 scalars or vectors): dOut * act (mul) or dOut (add);
/// dOut where `act` is null (no gate).
Value buildAttentionOutputGrad(OpBuilder &b, Location loc, CombineKind combine,
                               Value dOut, Value act);

/// One element of the gate's gradient before any sum over the value dim
/// (headwise gate) or the heads (shared gate), f32 scalars or vectors, `g`
/// the gate input:
///   - `y` the ungated output (backwardRecomputesOutput):
///     dOut * y * act'(g) (mul) or dOut * act'(g) (add);
///   - else `out` the saved gated output (mul): dOut * out * act'/act(g).
/// Exactly one of `y` and `out` is given (add needs neither: pass `y`).
Value buildGateGrad(OpBuilder &b, Location loc,
                    GateDerivativeAttrInterface gate, CombineKind combine,
                    Value g, Value dOut, Value y, Value out);

/// The gradient of one (unscaled) score from its weight `p` (normalized:
/// 0 for a masked key or an empty row), dP = dO . v_j (`dp`) and the row's
/// D = rowsum(dO * Y) (`delta`), times the softmax scale:
/// scale * p * (dp - delta). A masked key (p = 0) gives 0.
Value buildScoreGrad(OpBuilder &b, Location loc, Value p, Value dp, Value delta,
                     double scale);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_ATTENTION_BACKWARD_MATH_H
