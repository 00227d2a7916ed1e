//===- FlashKernel.h - the flash kernels' bodies ----------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashKernelConfig.h"

namespace mlir::gpu {
class GPUFuncOp;
} // namespace mlir::gpu

namespace mlir::gated_attention::flash {

/// Builds the body of the sm_80+ FlashAttention-2 kernel for `cfg` into
/// `func`, whose arguments are (q, k, v, gate, out : memref<?xT>, Sq, Skv :
/// index), the buffers flattened row-major from [B, H, S, D]: mma.sync
/// atoms, a cp.async double-buffered copy pipeline, one warp per 16 query
/// rows.
void buildMmaSyncFlashKernel(OpBuilder &b, Location loc,
                             const FlashKernelConfig &cfg, gpu::GPUFuncOp func);

/// Builds the body of the sm_90a kernel for `cfg` into `func`, whose
/// arguments are (q, k, v : !llvm.ptr to their TMA maps, gate, out :
/// memref<?xT>, Sq, Skv : index): wgmma atoms, a TMA + mbarrier copy
/// pipeline, one warpgroup per 64 query rows. Its gpu.module must declare
/// the shared array (TmaPipeline::declareSharedMemory).
void buildWgmmaFlashKernel(OpBuilder &b, Location loc,
                           const FlashKernelConfig &cfg, gpu::GPUFuncOp func);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H
