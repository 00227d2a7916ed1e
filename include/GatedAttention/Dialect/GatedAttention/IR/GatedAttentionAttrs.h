//===- GatedAttentionAttrs.h - gate attributes and interface ----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_ATTRS_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_ATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrInterfaces.h.inc"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h.inc"

namespace mlir::gated_attention {
/// The op's combine of the attention output `y` and the activated gate
/// `act` (f32 scalars or vectors): `y * act` or `y + act`.
Value buildCombine(OpBuilder &b, Location loc, CombineKind kind, Value y,
                   Value act);

/// The softmax normalizer of a row from its sum of weights `l` (an f32
/// scalar): `1 / l`,
/// or 0 for a row that saw no key (`l == 0`: its output is 0, not NaN). A
/// NaN `l` stays NaN, so NaN inputs are never turned into 0.
Value buildInverseRowSum(OpBuilder &b, Location loc, Value l);
} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_ATTRS_H
