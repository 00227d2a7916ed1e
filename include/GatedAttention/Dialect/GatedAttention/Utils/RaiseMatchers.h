//===- RaiseMatchers.h - gated attention spelled out in linalg --*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Pure matchers over linalg on tensors (they read IR, never change it) for
// the pieces of attention as frontends write them: scalar bodies (constants,
// sigmoid, scales), linalg structure (reductions, softmax, contractions, GQA
// repeats), causal masks, and the whole chain Q Kᵀ ... P V and its gate
// combine. The raising patterns (Transforms/Raise.cpp) and gate plugins
// build on them; test-gated-attention-raise-matchers reports what each finds.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_UTILS_RAISEMATCHERS_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_UTILS_RAISEMATCHERS_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <optional>
#include <utility>
#include <variant>

namespace mlir::gated_attention {

//===----------------------------------------------------------------------===//
// Scalar bodies
//===----------------------------------------------------------------------===//

/// The value of float constant `v`: an arith.constant, or one converted by
/// truncf / extf (frontends leave those in bodies: torch-mlir truncates its
/// f64 scales there).
std::optional<double> constantFloat(Value v);

/// Whether `v` is the float constant `c`.
bool isConstant(Value v, double c);

/// Binary op of type OpTy with operands {a, b} in either order; returns the
/// operand that is not `known`, or null.
template <typename OpTy>
Value otherOperand(Value v, function_ref<bool(Value)> known) {
  auto op = v.getDefiningOp<OpTy>();
  if (!op)
    return {};
  if (known(op.getLhs()))
    return op.getRhs();
  if (known(op.getRhs()))
    return op.getLhs();
  return {};
}

/// If `v` is sigmoid(y) spelled with arith/math (`1 / (1 + exp(-y))`, with
/// -y as negf, 0 - y or y * -1), returns y; else null. For gate matchers.
Value matchSigmoid(Value v);

/// If `y` is `x * c`, `c * x` or `x / c` with a constant c, returns the
/// factor (c or 1 / c); for gate matchers (and the raise's scale).
std::optional<double> matchConstantScale(Value y, Value x);

/// The built-in gate activation (sigmoid, silu, ns_sigmoid) that `v`
/// computes from `x`, if any.
std::optional<GateKind> matchBuiltinActivation(Value v, Value x);

//===----------------------------------------------------------------------===//
// Linalg structure
//===----------------------------------------------------------------------===//

/// The value yielded by a single-result generic's body.
Value yielded(linalg::GenericOp op);

/// An elementwise generic: all loops parallel, every map the identity.
bool isElementwise(linalg::GenericOp op);

/// An elementwise generic with one input (`input`) and one result.
linalg::GenericOp matchUnaryElementwise(Value v, Value &input);

/// Whether `v` is a linalg.fill of constant `c`.
bool isFilledWith(Value v, double c);

/// A reduction of x over its last dimension whose body combines the element
/// and the accumulator with an op `isCombine` accepts, from an init `isInit`
/// accepts: returns x.
Value matchLastDimReduction(Value v, function_ref<bool(Operation *)> isCombine,
                            function_ref<bool(Value)> isInit);

/// softmax over the last dimension: linalg.softmax, or the decomposition
/// max / exp(x - max) / sum / divide. Returns its input.
Value matchSoftmax(Value v);

/// S * c, c * S or S / c elementwise with a constant c: returns S and sets
/// `scale`.
Value matchScale(Value v, double &scale);

/// A batched contraction C[batch..., m, n] = sum_k A[batch..., m, k] *
/// B[batch..., k, n] (or B[batch..., n, k] when `rhsTransposed`) into a
/// zero fill, named or generic, with one or two batch dimensions.
struct BatchedMatmul {
  Value lhs, rhs;
  bool rhsTransposed;
};
std::optional<BatchedMatmul> matchBatchedMatmul(Value v);

/// Whether `v` is a ranked tensor of rank 3 (heads folded into the batch)
/// or 4 ([B, H, S, D]).
bool hasAttentionRank(Value v);

/// `v` as [B, H, S, D]: itself when 4-D; the source of a collapse_shape
/// [[0, 1], [2], [3]] of a 4-D tensor when 3-D; else (null, the type of `v`
/// with a unit batch in front), for the caller to materialize.
std::pair<Value, RankedTensorType> as4D(Value v);

/// K or V as the op reads them: a GQA repetition (a broadcast of
/// [B, Hkv, S, D] to [B, Hkv, R, S, D], linalg.broadcast or a generic that
/// is one, collapsed to [B, Hkv * R, S, D]) is looked through.
Value throughRepeat(Value v);

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// An element of a tensor computed from constants: an integer (i1 and
/// index included) or a float, exactly as the IR computes it.
using ConstantElement = std::variant<APInt, APFloat>;

/// Element `index` of `v` where `v` is computed from constants alone:
/// arith.constant (dense or dense_resource), linalg.fill, static
/// tensor.extract_slice, expand_shape and collapse_shape, and all-parallel
/// linalg.generics whose bodies are integer and float arith, compares and
/// selects on such inputs and linalg indices. nullopt for anything else.
std::optional<ConstantElement> constantElementAt(Value v,
                                                 ArrayRef<int64_t> index);

/// The scalar `scalar` of `op`'s body at loop point `loops`, its inputs read
/// through constantElementAt (so nullopt if it reads a computed input).
std::optional<ConstantElement>
constantScalarAt(linalg::GenericOp op, Value scalar, ArrayRef<int64_t> loops);

/// The bottom-right causal mask: S where key j <= query i + (Skv - Sq), -inf
/// elsewhere, as a select on (or an added select of 0 / -inf on) any linear
/// comparison of linalg.index values that means that, or an added constant
/// triangle. (torch's `is_causal` is top-left, j <= i: the same when
/// Sq == Skv, and not matched otherwise.) Where Skv >= Sq (every row sees a
/// key) the type's lowest finite value masks too. Returns S. With `scale`,
/// a mask applied to a constant multiple of S in the same generic matches
/// too and `*scale` is that constant (else 1); without, it does not.
Value matchCausalMask(Value v, double *scale = nullptr);

/// torch's guard for rows that see no key: `select(all_j(S == -inf), 0, P)`,
/// the flag an and-reduction over the keys of `S == -inf` (S perhaps
/// extended to f64 first). Returns P and sets `scores` to S.
Value matchEmptyRowGuard(Value v, Value &scores);

//===----------------------------------------------------------------------===//
// The attention chain and its gate
//===----------------------------------------------------------------------===//

/// Q Kᵀ -> [scales] -> [causal mask] -> softmax -> [empty-row guard] -> P V.
struct AttentionChain {
  Value query, key, value;
  /// The Q Kᵀ contraction's result.
  Value scores;
  /// The product of the constant factors on the scores, Q and K.
  double scale = 1.0;
  bool causal = false;
};

/// The attention chain whose P V contraction is `out`.
std::optional<AttentionChain> matchAttentionChain(Value out);

/// Whether the ops from the Q Kᵀ contraction `scores` to `root` are used
/// only by one another and `root` (else raising would keep the scores alive
/// and compute the attention twice: a gate computed from the scores, say).
bool isPrivateChain(Operation *root, Value scores);

/// Recognizes a gate activation in a linalg body: given the value `act`
/// combined with the attention output and the body's gate argument `x`,
/// returns the gate attribute (implementing GateFunctionAttrInterface) with
/// `act = activation(x)`, or null.
using GateActivationFn = function_ref<Attribute(Value act, Value x)>;

/// The gate combine `O * act(G)` / `O + act(G)` of an elementwise generic.
struct GateCombine {
  Value attention, gate;
  GateFunctionAttrInterface function;
  CombineKind combine;
  /// How the combine reads the gate: the identity (per element and head),
  /// or without the last dimension (headwise) and/or, on [B, H, S, D],
  /// without the heads (shared); its dimensions perhaps permuted (a gate
  /// in [B, S, H, D] read by a combine on [B, H, S, D]).
  AffineMap map;
  /// The combine reads `gate` collapsed this way (the activation computed
  /// before unit dims were dropped), if not empty.
  SmallVector<ReassociationIndices> collapse;
};

/// The combine of `root`, `act` in its body or in an elementwise producer
/// of the gate operand (perhaps behind a collapse of unit dims).
std::optional<GateCombine> matchGateCombine(linalg::GenericOp root,
                                            GateActivationFn activation);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_UTILS_RAISEMATCHERS_H
