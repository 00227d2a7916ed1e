//===- ConvertAttentionOps.h - shared driver of the conversions -*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_CONVERT_ATTENTION_OPS_H
#define GATED_ATTENTION_CONVERSION_CONVERT_ATTENTION_OPS_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::gated_attention {

/// Applies `patterns` to every gated_attention.attention under `root` and
/// fails (with the conversion's diagnostic) if one is left: the driver of
/// the passes that lower the op, whatever they lower it to.
inline LogicalResult convertAttentionOps(Operation *root,
                                         RewritePatternSet &&patterns) {
  ConversionTarget target(*root->getContext());
  target.addIllegalOp<AttentionOp>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  return applyPartialConversion(root, target, std::move(patterns));
}

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_CONVERSION_CONVERT_ATTENTION_OPS_H
