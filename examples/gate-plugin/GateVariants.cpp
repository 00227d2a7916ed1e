//===- GateVariants.cpp - two gate variants as a plugin -------------------===//
//
// A dialect plugin for gated-attention-opt adding two gate activations:
//   #gate_variants.tanh                               act(g) = tanh(g)
//   #gate_variants.sigmoid<temperature = T : f32>     act(g) = sigmoid(g / T)
// Each attribute implements GateFunctionAttrInterface (the activation every
// lowering inlines into the fused epilogue), and the plugin adds one gate
// folding pattern so that `--gated-attention-raise` recognizes the unfused
// forms `Y * tanh(G)` and `Y * sigmoid(G / T)` (or `G * (1 / T)`). The
// temperature sigmoid also implements GateDerivativeAttrInterface, so the
// backward op (training) takes it; tanh is inference-only.
//
//===----------------------------------------------------------------------===//

#include "GateVariants.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;
using namespace gate_variants;

#include "GateVariantsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "GateVariantsAttrs.cpp.inc"

void GateVariantsDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "GateVariantsAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// The activations (GateFunctionAttrInterface)
//===----------------------------------------------------------------------===//

/// A constant of `like`'s type (f32 scalar or vector of f32).
static Value constantLike(OpBuilder &b, Location loc, Value like,
                          double value) {
  Type type = like.getType();
  TypedAttr attr = b.getFloatAttr(getElementTypeOrSelf(type), value);
  if (auto shaped = dyn_cast<ShapedType>(type))
    attr = SplatElementsAttr::get(shaped, attr);
  return arith::ConstantOp::create(b, loc, attr);
}

Value TanhAttr::buildActivation(OpBuilder &b, Location loc, Value x) const {
  return math::TanhOp::create(b, loc, x);
}

/// 1 / (1 + exp(-y)).
static Value buildSigmoid(OpBuilder &b, Location loc, Value y) {
  Value one = constantLike(b, loc, y, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, y));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

/// x / T, as x * (1 / T).
static Value scaledByInverse(OpBuilder &b, Location loc, Value x,
                             double inverse) {
  return arith::MulFOp::create(b, loc, x, constantLike(b, loc, x, inverse));
}

Value SigmoidAttr::buildActivation(OpBuilder &b, Location loc, Value x) const {
  double inverse = 1.0 / getTemperature().getValueAsDouble();
  return buildSigmoid(b, loc, scaledByInverse(b, loc, x, inverse));
}

//===----------------------------------------------------------------------===//
// The derivative (GateDerivativeAttrInterface): training
//===----------------------------------------------------------------------===//

// d/dx sigmoid(x / T) = sigmoid(y) sigmoid(-y) / T with y = x / T; its ratio
// to the activation, sigmoid(-y) / T, is bounded, so the backward reads the
// saved gated output instead of recomputing the ungated one.

Value SigmoidAttr::buildDerivative(OpBuilder &b, Location loc, Value x) const {
  double inverse = 1.0 / getTemperature().getValueAsDouble();
  Value y = scaledByInverse(b, loc, x, inverse);
  Value product = arith::MulFOp::create(
      b, loc, buildSigmoid(b, loc, y),
      buildSigmoid(b, loc, arith::NegFOp::create(b, loc, y)));
  return scaledByInverse(b, loc, product, inverse);
}

Value SigmoidAttr::buildLogDerivative(OpBuilder &b, Location loc,
                                      Value x) const {
  double inverse = 1.0 / getTemperature().getValueAsDouble();
  Value y = scaledByInverse(b, loc, x, inverse);
  return scaledByInverse(
      b, loc, buildSigmoid(b, loc, arith::NegFOp::create(b, loc, y)), inverse);
}

LogicalResult SigmoidAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  FloatAttr temperature) {
  if (!temperature.getType().isF32() || !(temperature.getValueAsDouble() > 0.0))
    return emitError() << "temperature must be a positive f32, got "
                       << temperature;
  return success();
}

//===----------------------------------------------------------------------===//
// Raising the unfused forms
//===----------------------------------------------------------------------===//

/// The gate attribute for `act` computed from the gate value `x`, if `act`
/// is one of this plugin's activations.
static Attribute matchGateVariant(Value act, Value x) {
  MLIRContext *context = act.getContext();
  if (auto tanh = act.getDefiningOp<math::TanhOp>();
      tanh && tanh.getOperand() == x)
    return TanhAttr::get(context);
  // sigmoid(x * c) or sigmoid(x / T): temperature 1 / c or T.
  if (Value y = gated_attention::matchSigmoid(act))
    if (std::optional<double> c = gated_attention::matchConstantScale(y, x);
        c && *c > 0.0)
      return SigmoidAttr::get(
          context, FloatAttr::get(Float32Type::get(context), 1.0 / *c));
  return {};
}

static void populateGateVariantsRaisePatterns(RewritePatternSet &patterns) {
  gated_attention::populateGateFoldingPatterns(patterns, matchGateVariant);
}

//===----------------------------------------------------------------------===//
// The plugin's entry point (--load-dialect-plugin)
//===----------------------------------------------------------------------===//

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "GateVariants", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            gated_attention::registerGateVariant<GateVariantsDialect>(
                *registry, populateGateVariantsRaisePatterns);
          }};
}
