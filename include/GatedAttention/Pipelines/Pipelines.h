//===- Pipelines.h - gated-attention pass pipelines -------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_PIPELINES_PIPELINES_H
#define GATED_ATTENTION_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;

namespace gated_attention {

/// Options of `--gated-attention-to-llvm`.
struct GatedAttentionToLLVMPipelineOptions
    : public PassPipelineOptions<GatedAttentionToLLVMPipelineOptions> {};

/// Lowers a module of `func` + tensor-level upstream ops (linalg, tensor,
/// arith, math, scf) + gated_attention ops to the LLVM dialect, ready for
/// `mlir-runner` or `mlir-translate --mlir-to-llvmir`.
void buildGatedAttentionToLLVMPipeline(
    OpPassManager &pm, const GatedAttentionToLLVMPipelineOptions &options);

/// Registers the pipelines above with the global pipeline registry.
void registerGatedAttentionPipelines();

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_PIPELINES_PIPELINES_H
