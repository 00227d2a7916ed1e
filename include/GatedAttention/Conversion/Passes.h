//===- Passes.h - gated-attention conversion passes -------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_PASSES_H
#define GATED_ATTENTION_CONVERSION_PASSES_H

#include "GatedAttention/Conversion/GatedAttentionBackwardToLinalg/GatedAttentionBackwardToLinalg.h"
#include "GatedAttention/Conversion/GatedAttentionToLinalg/GatedAttentionToLinalg.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/GatedAttentionToNVGPU.h"
#include "GatedAttention/Conversion/GatedAttentionToParallelRows/GatedAttentionToParallelRows.h"
#include "GatedAttention/Conversion/MemRefCopyToLinalg/MemRefCopyToLinalg.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gated_attention {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "GatedAttention/Conversion/Passes.h.inc"

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_CONVERSION_PASSES_H
