//===- FlashLaunch.h - host side of the flash kernels' launches -*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// What the patterns that replace an attention op by a launch of its flash
// kernel share (GatedAttentionToNVGPU.cpp for the dense op,
// PagedAttentionToNVGPU.cpp for the paged one): choosing the kernel,
// emitting it once per configuration, flattening buffers, launching.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_LAUNCH_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_LAUNCH_H

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/GatedAttentionToNVGPU.h"
#include "KernelInterface.h"
#include "KernelTiles.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gated_attention::flash {

/// Returns the kernel for `cfg` in `module`, emitting it (into a gpu.module
/// of its own, its launch description on `module`) the first time.
gpu::GPUFuncOp getOrCreateKernel(ModuleOp module, const FlashKernelConfig &cfg,
                                 Location loc);

/// The kernel that serves `op` when `requested` is asked for: ops the wgmma
/// kernel does not take (head dims not multiples of 64, paged ops) get the
/// mma.sync one, which runs on every chip.
FlashKernelKind kernelFor(Operation *op, FlashKernelKind requested);

/// The kernel for `op` (a dense or paged op) under `options`, or a match
/// failure saying why there is none: the op is left for the SIMT lowering
/// (the pass has already reported tiles the user chose that do not fit).
FailureOr<FlashKernelConfig> configFor(Operation *op,
                                       const NVGPUKernelOptions &options,
                                       PatternRewriter &rewriter);

/// `buffer` (any rank, row-major) as the flat memref<?xT> a kernel takes.
Value flatView(OpBuilder &b, Location loc, Value buffer);

/// A flat memref<?xT> of `tensor`, for a kernel argument.
Value flatBuffer(OpBuilder &b, Location loc, Value tensor);

/// The TMA map (an !llvm.ptr to it) of the [B, H, S, width] `tensor`
/// viewed as (B x H, S, width), boxes of `rows` x 64 elements, 128-byte
/// swizzle, zero fill: made on the host (the runtime's
/// cuTensorMapEncodeTiled), as a tensor-map argument's description says;
/// null when `tensor` is empty (its launch is skipped).
Value tensorMapOf(OpBuilder &b, Location loc, Value tensor, int64_t rows);

/// A launch's values by name: the kernel's arguments (a stride argument's
/// under "<buffer>.<dim>": "k.B") and the grid's symbols ("B", "Sq", "T",
/// "splits"), as KernelInterface::launchOperands and buildGrid read them.
using LaunchValues = llvm::StringMap<Value>;

/// Launches `kernel` of `cfg` when `nonEmpty` (CUDA rejects empty grids),
/// its operands and grid those of its interface for `values` (a persistent
/// kernel's on `smCount` SMs: KernelInterface::buildGrid).
void launchWhen(OpBuilder &b, Location loc, Value nonEmpty,
                gpu::GPUFuncOp kernel, const FlashKernelConfig &cfg,
                const LaunchValues &values, int64_t smCount = 0);

/// The number of key splits of a launch of `ctas` CTAs whose sequences hold
/// at most `capacity` keys: enough CTAs for kSplitTargetCTAs, each split at
/// least kMinKeysPerSplit keys of the capacity, at most kMaxSplits
/// (python/gated_attention/paged.py: choose_splits is the same rule with
/// the device's SM count). Host-side sizes only: nothing is read back.
Value buildSplitCount(OpBuilder &b, Location loc, Value ctas, Value capacity);

/// Launches `kernel` of `cfg` with `values` when `nonEmpty`; or, when
/// `splits` > 1 as well, split-KV: the split kernel of `cfg` with
/// `splitValues` and the f32 partials (allocated here for `splits` x T rows
/// of Hq heads, T = splitValues["T"]), then the merge kernel writing the
/// gated rows of "out" ([T, Hq, Dv], "gate" [T, Hg, Dg]) and, where
/// `values` has one, the log-sum-exp "lse" [T, Hq], and frees the
/// partials. (`splitValues` differ from `values` where the split kernel is
/// mma.sync's and the direct one is not.) `smCount` as for launchWhen.
void launchDirectOrSplit(OpBuilder &b, Location loc, ModuleOp module,
                         const FlashKernelConfig &cfg, gpu::GPUFuncOp kernel,
                         Value nonEmpty, Value splits,
                         const LaunchValues &values, LaunchValues splitValues,
                         int64_t smCount = 0);

/// Replaces an op of type OpT by a launch of its flash kernel (built on
/// first use): `launch` builds the host side.
template <typename OpT> struct ToFlashKernel : OpRewritePattern<OpT> {
  ToFlashKernel(MLIRContext *ctx, const NVGPUKernelOptions &options)
      : OpRewritePattern<OpT>(ctx), options(options) {}

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    FailureOr<FlashKernelConfig> cfg = configFor(op, options, rewriter);
    if (failed(cfg))
      return failure();
    auto module = op->template getParentOfType<ModuleOp>();
    gpu::GPUFuncOp kernel = getOrCreateKernel(module, *cfg, op.getLoc());
    launch(op, *cfg, kernel, rewriter);
    return success();
  }

  virtual void launch(OpT op, const FlashKernelConfig &cfg,
                      gpu::GPUFuncOp kernel,
                      PatternRewriter &rewriter) const = 0;

  NVGPUKernelOptions options;
};

/// Adds the pattern that replaces a gated_attention.paged_attention by
/// launches of the paged kernels (PagedAttentionToNVGPU.cpp).
void populatePagedAttentionToNVGPUPatterns(RewritePatternSet &patterns,
                                           const NVGPUKernelOptions &options);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_LAUNCH_H
