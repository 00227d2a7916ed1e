//===- AttentionBackwardOp.cpp - gated_attention.attention_backward -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "VerifierSupport.h"

using namespace mlir;
using namespace mlir::gated_attention;

float AttentionBackwardOp::getScaleValue() {
  return scaleOrDefault(getScale(), getHeadDim());
}

namespace {
/// The backward's shape contract: the forward's (with `output` as its
/// result), `output_grad` shaped like `output`, one gradient per input of
/// that input's type.
class BackwardShapeContract : public ShapeDiagnostics {
public:
  explicit BackwardShapeContract(AttentionBackwardOp op)
      : ShapeDiagnostics(op), op(op) {}

  LogicalResult verify();

private:
  LogicalResult sameShape(StringRef name, RankedTensorType type,
                          StringRef otherName, RankedTensorType other);

  AttentionBackwardOp op;
};
} // namespace

/// `type` (named `name`) has the shape and element type of `other`: the same
/// rank, and each dim equal where both are static.
LogicalResult BackwardShapeContract::sameShape(StringRef name,
                                               RankedTensorType type,
                                               StringRef otherName,
                                               RankedTensorType other) {
  if (type.getRank() != other.getRank())
    return op.emitOpError() << name << " must have the " << otherName
                            << " shape " << other << ", got " << type;
  if (type.getElementType() != other.getElementType())
    return op.emitOpError() << name << " element type must be "
                            << other.getElementType() << " (the " << otherName
                            << " element type), got " << type.getElementType();
  for (unsigned dim = 0; dim < type.getRank(); ++dim) {
    int64_t expected = other.getDimSize(dim), actual = type.getDimSize(dim);
    if (ShapedType::isDynamic(expected) || ShapedType::isDynamic(actual) ||
        expected == actual)
      continue;
    return op.emitOpError() << name << " dim " << dim << " must be " << expected
                            << " (the " << otherName << "'s), got " << actual;
  }
  return success();
}

LogicalResult BackwardShapeContract::verify() {
  RankedTensorType q = op.getQueryType(), k = op.getKeyType(),
                   v = op.getValueType(), g = op.getGateType(),
                   out = op.getOutputType(),
                   dout = op.getOutputGrad().getType();
  if (failed(DenseShapeContract(op, q, k, v, g, "output", out).verify()))
    return failure();
  if (failed(hasRank("output_grad", dout, 4, "B x Hq x Sq x Dv")) ||
      failed(sameShape("output_grad", dout, "output", out)) ||
      failed(boundedOperand("output_grad", dout)))
    return failure();

  if (op.hasLse() &&
      failed(
          logSumExp("lse", cast<RankedTensorType>(op.getLse().getType()), q)))
    return failure();

  if (static_cast<bool>(op.getGateGrad()) != op.hasGate())
    return op.emitOpError()
           << (op.hasGate() ? "has a gate operand but no gate_grad result"
                            : "has a gate_grad result but no gate operand");
  SmallVector<std::tuple<StringRef, Value, StringRef, RankedTensorType>, 4>
      grads = {{"query_grad", op.getQueryGrad(), "query", q},
               {"key_grad", op.getKeyGrad(), "key", k},
               {"value_grad", op.getValueGrad(), "value", v}};
  if (g)
    grads.push_back({"gate_grad", op.getGateGrad(), "gate", g});
  for (auto [name, grad, input, inputType] : grads)
    if (failed(sameShape(name, cast<RankedTensorType>(grad.getType()), input,
                         inputType)))
      return failure();
  return success();
}

LogicalResult AttentionBackwardOp::verify() {
  if (failed(BackwardShapeContract(*this).verify()) ||
      failed(verifyNoUnknownAttributes(*this, getAttributeNames())) ||
      failed(verifyScale(*this, getScale())))
    return failure();
  // A gate without a derivative is inference-only: an error here, when the
  // training graph is built, not a lowering's failure later.
  if (hasGate() && !isa<GateDerivativeAttrInterface>(getGate()))
    return emitOpError()
           << "gate " << getGate()
           << " has no derivative: its attribute does not implement "
              "GateDerivativeAttrInterface (an inference-only gate)";
  return success();
}
