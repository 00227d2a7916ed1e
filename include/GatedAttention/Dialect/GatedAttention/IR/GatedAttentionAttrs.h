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

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_ATTRS_H
