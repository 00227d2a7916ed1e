//===- GatedAttentionDialect.h - gated_attention dialect --------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_DIALECT_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_DIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
class RewritePatternSet;
namespace gated_attention {
/// Adds patterns to a set (see GatedAttentionDialect::addRaisePatterns).
using RaisePatternsFn = void (*)(RewritePatternSet &);
} // namespace gated_attention
} // namespace mlir

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOpsDialect.h.inc"

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_DIALECT_H
