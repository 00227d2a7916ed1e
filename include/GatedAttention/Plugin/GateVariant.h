//===- GateVariant.h - adding gate variants out of tree ---------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The API of gate-variant plugins (see docs/ExtendingGates.md). A variant is
//   1. an attribute implementing GateFunctionAttrInterface (its activation,
//      used by every lowering of gated_attention.attention), in a dialect of
//      the plugin's own, and
//   2. a function adding the patterns that raise its unfused form, usually
//      one populateGateFoldingPatterns call with a matcher.
// A dialect plugin (`gated-attention-opt --load-dialect-plugin=...`)
// registers both with registerGateVariant from mlirGetDialectPluginInfo.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_PLUGIN_GATE_VARIANT_H
#define GATED_ATTENTION_PLUGIN_GATE_VARIANT_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionDialect.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"

#include <memory>

namespace mlir::gated_attention {
namespace detail {
/// Applied when the gated_attention dialect is loaded: loads the variant's
/// dialect (the raise patterns create its attributes, which must not load a
/// dialect while passes run) and hands the patterns to the dialect.
template <typename VariantDialect>
struct GateVariantExtension
    : DialectExtension<GateVariantExtension<VariantDialect>,
                       GatedAttentionDialect> {
  explicit GateVariantExtension(RaisePatternsFn populate)
      : populate(populate) {}

  void apply(MLIRContext *context, GatedAttentionDialect *dialect) const final {
    context->getOrLoadDialect<VariantDialect>();
    dialect->addRaisePatterns(populate);
  }

  RaisePatternsFn populate;
};
} // namespace detail

/// Registers a gate variant: `VariantDialect` (holding its gate attribute)
/// and `populate`, which adds the patterns `gated-attention-raise` runs to
/// fold the variant's unfused form into the op.
template <typename VariantDialect>
void registerGateVariant(DialectRegistry &registry, RaisePatternsFn populate) {
  registry.insert<VariantDialect>();
  // Keyed by `populate`: registering a variant twice adds its patterns once.
  registry.addExtension(
      TypeID::getFromOpaquePointer(reinterpret_cast<const void *>(populate)),
      std::make_unique<detail::GateVariantExtension<VariantDialect>>(populate));
}
} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_PLUGIN_GATE_VARIANT_H
