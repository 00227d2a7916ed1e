//===- AttentionBackwardMath.cpp - the backward's math, once --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

#include <memory>

using namespace mlir;
using namespace mlir::gated_attention;

bool mlir::gated_attention::backwardRecomputesOutput(Attribute gate,
                                                     CombineKind combine) {
  if (!gate)
    return false;
  if (combine == CombineKind::add)
    return true;
  auto derivative = dyn_cast<GateDerivativeAttrInterface>(gate);
  if (!derivative)
    return true;
  // Whether act'/act exists is a property of the attribute, not of a value:
  // ask once on a block argument, in a scratch block that is then dropped
  // with what was built in it (callers have the arith and math dialects
  // loaded: they lower to them).
  MLIRContext *ctx = gate.getContext();
  auto scratch = std::make_unique<Block>();
  Location loc = UnknownLoc::get(ctx);
  Value x = scratch->addArgument(Float32Type::get(ctx), loc);
  OpBuilder builder(ctx);
  builder.setInsertionPointToStart(scratch.get());
  return !derivative.buildLogDerivative(builder, loc, x);
}

Value mlir::gated_attention::buildAttentionOutputGrad(OpBuilder &b,
                                                      Location loc,
                                                      CombineKind combine,
                                                      Value dOut, Value act) {
  if (!act || combine == CombineKind::add)
    return dOut;
  return arith::MulFOp::create(b, loc, dOut, act);
}

Value mlir::gated_attention::buildGateGrad(OpBuilder &b, Location loc,
                                           GateDerivativeAttrInterface gate,
                                           CombineKind combine, Value g,
                                           Value dOut, Value y, Value out) {
  assert(static_cast<bool>(y) != static_cast<bool>(out) &&
         "exactly one of y and out");
  if (out) {
    Value ratio = gate.buildLogDerivative(b, loc, g);
    assert(ratio && "the gate has no bounded act'/act");
    Value scaled = arith::MulFOp::create(b, loc, dOut, out);
    return arith::MulFOp::create(b, loc, scaled, ratio);
  }
  Value derivative = gate.buildDerivative(b, loc, g);
  if (combine == CombineKind::add)
    return arith::MulFOp::create(b, loc, dOut, derivative);
  Value scaled = arith::MulFOp::create(b, loc, dOut, y);
  return arith::MulFOp::create(b, loc, scaled, derivative);
}

Value mlir::gated_attention::buildScoreGrad(OpBuilder &b, Location loc, Value p,
                                            Value dp, Value delta,
                                            double scale) {
  Value diff = arith::SubFOp::create(b, loc, dp, delta);
  Value grad = arith::MulFOp::create(b, loc, p, diff);
  Type type = p.getType();
  TypedAttr attr = b.getFloatAttr(getElementTypeOrSelf(type), scale);
  if (auto shaped = dyn_cast<ShapedType>(type))
    attr = SplatElementsAttr::get(shaped, attr);
  return arith::MulFOp::create(b, loc, grad,
                               arith::ConstantOp::create(b, loc, attr));
}
