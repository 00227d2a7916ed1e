//===- ConvertAttentionOps.h - shared driver of the conversions -*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_CONVERT_ATTENTION_OPS_H
#define GATED_ATTENTION_CONVERSION_CONVERT_ATTENTION_OPS_H

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::gated_attention {

/// Applies `patterns` to every op of type OpT (gated_attention.attention
/// by default) under `root` and fails (with the conversion's diagnostic) if
/// one is left: the driver of the passes that lower the ops, whatever they
/// lower them to.
/// With `wideOnly`, only the ops that accumulate wider than f32 (f64) are
/// converted; the others are left as they are.
template <typename OpT = AttentionOp>
inline LogicalResult convertAttentionOps(Operation *root,
                                         RewritePatternSet &&patterns,
                                         bool wideOnly = false) {
  ConversionTarget target(*root->getContext());
  target.addDynamicallyLegalOp<OpT>([=](OpT op) {
    return wideOnly &&
           !needsWideAccumulator(op.getQueryType().getElementType());
  });
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  return applyPartialConversion(root, target, std::move(patterns));
}

/// A buffer for a result of type `type` (identity layout; the output or the
/// log-sum-exp, dims 0 and 2 are B and Sq), sized by the batch and
/// query-length values where the type leaves them dynamic: what the
/// lowerings that write the result with stores allocate.
inline Value allocateResultBuffer(OpBuilder &b, Location loc,
                                  RankedTensorType type, Value numBatches,
                                  Value numRows) {
  SmallVector<Value> dynamicSizes;
  if (type.isDynamicDim(0))
    dynamicSizes.push_back(numBatches);
  if (type.isDynamicDim(2))
    dynamicSizes.push_back(numRows);
  return memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()),
      dynamicSizes);
}
/// The buffer for the output of `op`.
inline Value allocateResultBuffer(OpBuilder &b, AttentionOp op,
                                  Value numBatches, Value numRows) {
  return allocateResultBuffer(b, op.getLoc(), op.getResultType(), numBatches,
                              numRows);
}

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_CONVERSION_CONVERT_ATTENTION_OPS_H
