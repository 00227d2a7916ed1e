//===- GatedAttentionOps.h - gated_attention ops ----------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_OPS_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_OPS_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#define GET_OP_CLASSES
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h.inc"

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_GATED_ATTENTION_OPS_H
