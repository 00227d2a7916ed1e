//===- FlashKernel.h - the flash kernels' bodies ----------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashKernelConfig.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/TileScheduler.h"

#include "mlir/IR/Block.h"

#include "llvm/ADT/STLExtras.h"

namespace mlir::gpu {
class GPUFuncOp;
} // namespace mlir::gpu

namespace mlir::gated_attention::flash {

/// The strides of strided `operand` (cfg.isStrided): the (batch, head)
/// stride arguments of its group in the kernel's entry block and its row
/// stride, a constant.
inline OperandStrides operandStrides(const KernelBuilder &kb, Block &entry,
                                     const FlashKernelConfig &cfg,
                                     StringRef operand) {
  auto groups = cfg.strideGroups();
  auto it = llvm::find_if(groups, [&](ArrayRef<StringRef> group) {
    return llvm::is_contained(group, operand);
  });
  assert(it != groups.end() && "not a strided operand");
  unsigned first =
      FlashKernelConfig::kFixedArguments +
      FlashKernelConfig::kStridesPerOperand * std::distance(groups.begin(), it);
  return OperandStrides{entry.getArgument(first), entry.getArgument(first + 1),
                        kb.idx(cfg.rowStride(operand))};
}

/// Builds the body of the sm_80+ FlashAttention-2 kernel for `cfg` into
/// `func`, whose arguments are (q, k, v, gate, out : memref<?xT>, Sq, Skv :
/// index, then the (batch, head) strides of q, k, v, gate and out :
/// index): each buffer holds its [B, H, S, D] elements at b * sb + h * sh
/// + s * cfg.rowStride(buffer) + d from its start (any layout whose rows
/// are contiguous: [B, H, S, D], [B, S, H, D], a slice of a wider
/// projection). mma.sync
/// atoms, a cp.async double-buffered copy pipeline, one warp per 16 query
/// rows.
void buildMmaSyncFlashKernel(OpBuilder &b, Location loc,
                             const FlashKernelConfig &cfg, gpu::GPUFuncOp func);

/// Builds the split-KV merge kernel of paged `cfg` (cfg.isMerge()) into
/// `func`, whose arguments are (gate, out : memref<?xT>, o_partial,
/// lse_partial : memref<?xf32>, T, splits : index): a CTA per (token,
/// head), a thread per column pair.
void buildSplitMergeKernel(OpBuilder &b, Location loc,
                           const FlashKernelConfig &cfg, gpu::GPUFuncOp func);

/// Builds the body of the sm_90a kernel for `cfg` into `func`, whose
/// arguments are (q, k, v : !llvm.ptr to their TMA maps, gate, out :
/// memref<?xT>, Sq, Skv : index, then the strides of gate and out as for
/// mma.sync): wgmma atoms, a TMA + mbarrier copy
/// pipeline, one warpgroup per 64 query rows. Its gpu.module must declare
/// the shared array (TmaPipeline::declareSharedMemory).
void buildWgmmaFlashKernel(OpBuilder &b, Location loc,
                           const FlashKernelConfig &cfg, gpu::GPUFuncOp func);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_H
