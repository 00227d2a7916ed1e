//===- GatedAttentionToNVGPU.h - tensor-core flash kernel -------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_H

#include <cstdint>

namespace mlir {
class RewritePatternSet;

namespace gated_attention {

/// Rewrites f16/bf16 gated_attention.attention ops (head dims multiples of
/// 16 up to 256) into a launch of a tensor-core FlashAttention-2 kernel
/// (mma.sync m16n8k16, f32 accumulators, cp.async double buffering) that
/// the patterns add to the enclosing builtin.module as a gpu.module; one
/// kernel per configuration, shared by the ops that use it. Other ops do
/// not match, nor do ops whose tiles would not fit `maxSharedMemory` bytes
/// (see NVGPUChips.h). `warps` or `keyBlock` 0 picks them from the head dim.
void populateGatedAttentionToNVGPUPatterns(RewritePatternSet &patterns,
                                           int64_t warps, int64_t keyBlock,
                                           int64_t maxSharedMemory);

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_H
