//===- FlashKernel.h - the flash kernels' bodies ----------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H

#include "KernelInterface.h"

namespace mlir::gpu {
class GPUFuncOp;
} // namespace mlir::gpu

namespace mlir::gated_attention::flash {

/// Each kernel's arguments are those of KernelInterface::get(cfg), which
/// it reads by name (KernelArguments).

/// Builds the body of the sm_80+ FlashAttention-2 kernel for `cfg` into
/// `func`. Each dense buffer holds its [B, H, S, D] elements at b * sb +
/// h * sh + s * cfg.rowStride(buffer) + d from its start (any layout whose rows
/// are contiguous: [B, H, S, D], [B, S, H, D], a slice of a wider
/// projection). mma.sync
/// atoms, a cp.async double-buffered copy pipeline, one warp per 16 query
/// rows.
void buildMmaSyncFlashKernel(OpBuilder &b, Location loc,
                             const FlashKernelConfig &cfg, gpu::GPUFuncOp func);

/// Builds the split-KV merge kernel of `cfg` (cfg.isMerge()) into `func`:
/// a CTA per (token, head), a thread per column pair.
void buildSplitMergeKernel(OpBuilder &b, Location loc,
                           const FlashKernelConfig &cfg, gpu::GPUFuncOp func);

/// Builds the body of the sm_90a kernel for `cfg` into `func` (the dense
/// one reads Q, K and V through TMA maps): wgmma atoms, a TMA + mbarrier copy
/// pipeline, one warpgroup per 64 query rows. Its gpu.module must declare
/// the shared array (TmaPipeline::declareSharedMemory).
void buildWgmmaFlashKernel(OpBuilder &b, Location loc,
                           const FlashKernelConfig &cfg, gpu::GPUFuncOp func);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H
