//===- Passes.h - gated_attention transformations ---------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_PASSES_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_PASSES_H

#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gated_attention {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_PASSES_H
