//===- ScalarMatchers.cpp - constants, scales, gate activations -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::gated_attention;

std::optional<double> mlir::gated_attention::constantFloat(Value v) {
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble();
  Operation *op = v.getDefiningOp();
  if (!op || !isa<arith::TruncFOp, arith::ExtFOp>(op))
    return std::nullopt;
  if (!matchPattern(op->getOperand(0), m_Constant(&attr)))
    return std::nullopt;
  APFloat value = attr.getValue();
  bool lost;
  value.convert(cast<FloatType>(v.getType()).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
  return value.convertToDouble();
}

bool mlir::gated_attention::isConstant(Value v, double c) {
  std::optional<double> value = constantFloat(v);
  return value && *value == c;
}

/// x for -x spelled negf(x), 0 - x or x * -1; else null.
static Value negated(Value v) {
  if (auto neg = v.getDefiningOp<arith::NegFOp>())
    return neg.getOperand();
  if (auto sub = v.getDefiningOp<arith::SubFOp>())
    return isConstant(sub.getLhs(), 0.0) ? sub.getRhs() : Value();
  return otherOperand<arith::MulFOp>(v,
                                     [](Value c) { return isConstant(c, -1); });
}

/// y for 1 + exp(-y), the denominator of the sigmoid; else null.
static Value sigmoidDenominatorOf(Value v) {
  Value e =
      otherOperand<arith::AddFOp>(v, [](Value c) { return isConstant(c, 1); });
  auto exp = e ? e.getDefiningOp<math::ExpOp>() : nullptr;
  return exp ? negated(exp.getOperand()) : Value();
}

Value mlir::gated_attention::matchSigmoid(Value v) {
  auto div = v.getDefiningOp<arith::DivFOp>();
  if (!div || !isConstant(div.getLhs(), 1.0))
    return {};
  return sigmoidDenominatorOf(div.getRhs());
}

/// sigmoid(x) = 1 / (1 + exp(-x)).
static bool isSigmoid(Value v, Value x) { return x && matchSigmoid(v) == x; }

std::optional<GateKind> mlir::gated_attention::matchBuiltinActivation(Value v,
                                                                      Value x) {
  if (isSigmoid(v, x))
    return GateKind::sigmoid;
  // silu: x * sigmoid(x), or x / (1 + exp(-x)).
  if (Value s = otherOperand<arith::MulFOp>(v, [&](Value a) { return a == x; });
      s && isSigmoid(s, x))
    return GateKind::silu;
  if (auto div = v.getDefiningOp<arith::DivFOp>();
      div && div.getLhs() == x && sigmoidDenominatorOf(div.getRhs()) == x)
    return GateKind::silu;
  // ns_sigmoid: 0.5 + 0.5 * sigmoid(x).
  if (Value half = otherOperand<arith::AddFOp>(
          v, [](Value c) { return isConstant(c, 0.5); })) {
    Value s = otherOperand<arith::MulFOp>(
        half, [](Value c) { return isConstant(c, 0.5); });
    if (s && isSigmoid(s, x))
      return GateKind::ns_sigmoid;
  }
  return std::nullopt;
}

std::optional<double> mlir::gated_attention::matchConstantScale(Value y,
                                                                Value x) {
  if (Value other =
          otherOperand<arith::MulFOp>(y, [&](Value a) { return a == x; }))
    return constantFloat(other);
  if (auto div = y.getDefiningOp<arith::DivFOp>(); div && div.getLhs() == x)
    if (std::optional<double> c = constantFloat(div.getRhs()))
      return 1.0 / *c;
  return std::nullopt;
}
