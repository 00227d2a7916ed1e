//===- Passes.h - dialect-independent passes --------------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_TRANSFORMS_PASSES_H
#define GATED_ATTENTION_TRANSFORMS_PASSES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gated_attention {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "GatedAttention/Transforms/Passes.h.inc"

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_TRANSFORMS_PASSES_H
