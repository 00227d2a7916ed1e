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

/// What the tensor-core kernels are built with.
struct NVGPUKernelOptions {
  /// The sm_90a wgmma + TMA kernel for the ops it takes (head dims multiples
  /// of 64), instead of the mma.sync one.
  bool wgmma = false;
  /// The sm_90a backward kernels (dK/dV and dQ on wgmma) where the head dims
  /// fit them, instead of the mma.sync ones.
  bool backwardWgmma = false;
  /// The dense wgmma forward kernel loops over tiles (KernelInterface.h:
  /// persistent()).
  bool persistent = false;
  /// The device's SMs, > 0: the host code launches the persistent kernel
  /// on min(its tiles, smCount x ctasPerSM) CTAs; 0: one CTA per tile
  /// (KernelInterface::buildGrid).
  int64_t smCount = 0;
  /// 0 picks them from the head dim.
  int64_t warps = 0, keyBlock = 0;
  /// Shared memory a CTA may use on the target (see NVGPUChips.h).
  int64_t maxSharedMemory = 0;
};

/// Rewrites f16/bf16 gated_attention.attention ops (head dims multiples of
/// 16 up to 256) into a launch of a tensor-core flash kernel with the gate
/// in its epilogue that the patterns add to the enclosing builtin.module as
/// a gpu.module; one kernel per configuration, shared by the ops that use
/// it: FlashAttention-2 on mma.sync m16n8k16 with cp.async double buffering,
/// or (options.wgmma) the Hopper kernel on wgmma with TMA and mbarriers.
/// Other ops do not match, nor do ops whose tiles would not fit.
void populateGatedAttentionToNVGPUPatterns(RewritePatternSet &patterns,
                                           const NVGPUKernelOptions &options);

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_H
