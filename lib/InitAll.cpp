//===- InitAll.cpp - register everything of gated-attention ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/InitAll.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/LaunchEffects.h"
#include "GatedAttention/Conversion/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionDialect.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Pipelines/Pipelines.h"
#include "GatedAttention/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"

void mlir::gated_attention::registerAllDialects(DialectRegistry &registry) {
  registry.insert<GatedAttentionDialect>();
  // The PTX pipeline deallocates the buffers its launches use.
  registerLaunchEffects(registry);
}

void mlir::gated_attention::registerAllPasses() {
  registerGatedAttentionConversionPasses();
  registerGatedAttentionTransformsPasses();
  registerGatedAttentionGenericPasses();
}

void mlir::gated_attention::registerAllPipelines() {
  registerGatedAttentionPipelines();
}
