//===- GatedAttentionAttrs.cpp - built-in gate activations ----------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::gated_attention;

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrInterfaces.cpp.inc"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionEnums.cpp.inc"

/// A constant of `like`'s type (scalar float or vector of float).
static Value floatConstantLike(OpBuilder &b, Location loc, Value like,
                               double value) {
  Type type = like.getType();
  auto elementType = cast<FloatType>(getElementTypeOrSelf(type));
  TypedAttr attr = b.getFloatAttr(elementType, value);
  if (auto shaped = dyn_cast<ShapedType>(type))
    attr = SplatElementsAttr::get(shaped, attr);
  return arith::ConstantOp::create(b, loc, attr);
}

/// sigmoid(x) = 1 / (1 + exp(-x)); saturates to 0 / 1 without NaN.
static Value buildSigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = floatConstantLike(b, loc, x, 1.0);
  Value negX = arith::NegFOp::create(b, loc, x);
  Value expNegX = math::ExpOp::create(b, loc, negX);
  Value denom = arith::AddFOp::create(b, loc, one, expNegX);
  return arith::DivFOp::create(b, loc, one, denom);
}

Value mlir::gated_attention::buildGateFromSigmoid(OpBuilder &b, Location loc,
                                                  GateKind kind, Value x,
                                                  Value sigmoid) {
  switch (kind) {
  case GateKind::sigmoid:
    return sigmoid;
  case GateKind::silu:
    return arith::MulFOp::create(b, loc, x, sigmoid);
  case GateKind::ns_sigmoid: {
    Value half = floatConstantLike(b, loc, x, 0.5);
    Value halfSigmoid = arith::MulFOp::create(b, loc, half, sigmoid);
    return arith::AddFOp::create(b, loc, half, halfSigmoid);
  }
  }
  llvm_unreachable("unknown gate kind");
}

Value GateKindAttr::buildActivation(OpBuilder &b, Location loc, Value x) const {
  return buildGateFromSigmoid(b, loc, getValue(), x, buildSigmoid(b, loc, x));
}

// The derivatives use sigma(-x) = 1 - sigma(x), computed as such: it keeps
// its relative accuracy where sigma(x) rounds to 1 (x > 17 in f32), where
// 1 - sigma(x) would be 0.

Value GateKindAttr::buildDerivative(OpBuilder &b, Location loc, Value x) const {
  Value sigmoid = buildSigmoid(b, loc, x);
  Value sigmoidNeg = buildSigmoid(b, loc, arith::NegFOp::create(b, loc, x));
  // sigma'(x) = sigma(x) sigma(-x).
  Value sigmoidDerivative = arith::MulFOp::create(b, loc, sigmoid, sigmoidNeg);
  switch (getValue()) {
  case GateKind::sigmoid:
    return sigmoidDerivative;
  case GateKind::silu: {
    // (x sigma(x))' = sigma(x) + x sigma(x) sigma(-x).
    Value term = arith::MulFOp::create(b, loc, x, sigmoidDerivative);
    return arith::AddFOp::create(b, loc, sigmoid, term);
  }
  case GateKind::ns_sigmoid:
    return arith::MulFOp::create(b, loc, floatConstantLike(b, loc, x, 0.5),
                                 sigmoidDerivative);
  }
  llvm_unreachable("unknown gate kind");
}

Value GateKindAttr::buildLogDerivative(OpBuilder &b, Location loc,
                                       Value x) const {
  switch (getValue()) {
  case GateKind::sigmoid:
    // sigma' / sigma = sigma(-x), in (0, 1).
    return buildSigmoid(b, loc, arith::NegFOp::create(b, loc, x));
  case GateKind::silu:
    // (x sigma(x))' / (x sigma(x)) = 1/x + sigma(-x): unbounded at 0.
    return Value();
  case GateKind::ns_sigmoid: {
    // 0.5 sigma sigma(-x) / (0.5 + 0.5 sigma) = sigma sigma(-x) / (1 + sigma),
    // in (0, 1/4).
    Value sigmoid = buildSigmoid(b, loc, x);
    Value sigmoidNeg = buildSigmoid(b, loc, arith::NegFOp::create(b, loc, x));
    Value numerator = arith::MulFOp::create(b, loc, sigmoid, sigmoidNeg);
    Value denominator = arith::AddFOp::create(
        b, loc, floatConstantLike(b, loc, x, 1.0), sigmoid);
    return arith::DivFOp::create(b, loc, numerator, denominator);
  }
  }
  llvm_unreachable("unknown gate kind");
}
