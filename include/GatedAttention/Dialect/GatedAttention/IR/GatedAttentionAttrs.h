//===- GatedAttentionAttrs.h - gate attributes and interface ----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_ATTRS_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_ATTRS_H

#include "mlir/Dialect/SCF/IR/DeviceMappingInterface.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrInterfaces.h.inc"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h.inc"

namespace mlir::gated_attention {
/// act(x) of the built-in gate `kind` from `sigmoid` = sigmoid(x): a
/// lowering that evaluates the sigmoid its own way (the sm_90a kernel's
/// MUFU form) shares the rest of each activation's formula.
Value buildGateFromSigmoid(OpBuilder &b, Location loc, GateKind kind, Value x,
                           Value sigmoid);
} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_ATTRS_H
