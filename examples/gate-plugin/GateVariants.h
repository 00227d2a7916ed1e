//===- GateVariants.h - two gate variants as a plugin -----------*- C++ -*-===//
#ifndef GATE_VARIANTS_H
#define GATE_VARIANTS_H

#include "GatedAttention/Plugin/GateVariant.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "GateVariantsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "GateVariantsAttrs.h.inc"

#endif // GATE_VARIANTS_H
