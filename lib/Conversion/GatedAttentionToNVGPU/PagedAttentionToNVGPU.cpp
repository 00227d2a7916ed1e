//===- PagedAttentionToNVGPU.cpp - the paged op's kernel launches ---------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// A gated_attention.paged_attention becomes launches of the paged kernels
// (MmaSyncFlashKernel.cpp's or WgmmaFlashKernel.cpp's paged form, and
// for split-KV mma.sync's split form and MergeKernel.cpp) on its flat
// buffers: lengths, offsets and the block table stay in device memory, so
// the host code uses sizes only, and picks split-KV when the tiles alone
// leave the GPU idle.
//
//===----------------------------------------------------------------------===//

#include "FlashLaunch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
/// A paged_attention becomes a launch of the paged kernel on its flat
/// buffers: grid (ceildiv(T, queries per CTA) + B, Hq / packed heads);
/// lengths, offsets and the block table stay in device memory, read by the
/// kernel.
struct PagedAttentionToNVGPU : ToFlashKernel<PagedAttentionOp> {
  using ToFlashKernel::ToFlashKernel;

  void launch(PagedAttentionOp op, const FlashKernelConfig &cfg,
              gpu::GPUFuncOp kernel, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    Value numTokens = tensor::DimOp::create(rewriter, loc, op.getQuery(), 0);
    Value numSeqs = tensor::DimOp::create(rewriter, loc, op.getSeqLens(), 0);
    Value tableWidth =
        tensor::DimOp::create(rewriter, loc, op.getBlockTable(), 1);
    RankedTensorType resultType = op.getResultType();
    SmallVector<Value> dynamicSizes;
    if (resultType.isDynamicDim(0))
      dynamicSizes.push_back(numTokens);
    Value outBuffer = memref::AllocOp::create(
        rewriter, loc,
        MemRefType::get(resultType.getShape(), resultType.getElementType()),
        dynamicSizes);
    Value outFlat = flatView(rewriter, loc, outBuffer);
    // (Separate statements: one order of the ops for every compiler.)
    Value q = flatBuffer(rewriter, loc, op.getQuery());
    Value k = flatBuffer(rewriter, loc, op.getKeyCache());
    Value v = flatBuffer(rewriter, loc, op.getValueCache());
    // Without a gate the kernel never reads its gate argument.
    Value gate =
        op.hasGate() ? flatBuffer(rewriter, loc, op.getGateInput()) : outFlat;
    Value table = flatBuffer(rewriter, loc, op.getBlockTable());
    Value lens = flatBuffer(rewriter, loc, op.getSeqLens());
    Value cu = flatBuffer(rewriter, loc, op.getCuSeqlensQ());
    LaunchValues values{{"q", q},           {"k", k},
                        {"v", v},           {"gate", gate},
                        {"out", outFlat},   {"block_table", table},
                        {"seq_lens", lens}, {"cu_seqlens_q", cu},
                        {"B", numSeqs},     {"MB", tableWidth},
                        {"T", numTokens}};
    // CUDA rejects empty grids; without tokens there is nothing to write.
    Value nonEmpty = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ugt, numTokens, c(0));
    // Split-KV when the tiles alone leave the GPU idle (decode): the
    // number of splits from the direct kernel's CTAs and the table's
    // capacity, host-side sizes only (no lengths are read back).
    gpu::KernelDim3 grid =
        KernelInterface::get(cfg).buildGrid(rewriter, loc, values);
    Value ctas = arith::MulIOp::create(rewriter, loc, grid.x, grid.y);
    Value capacity =
        arith::MulIOp::create(rewriter, loc, tableWidth, c(cfg.pageSize));
    Value splits = buildSplitCount(rewriter, loc, ctas, capacity);
    launchDirectOrSplit(rewriter, loc, op->getParentOfType<ModuleOp>(), cfg,
                        kernel, nonEmpty, splits, values, values);
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, resultType, outBuffer,
                               /*restrict=*/true, /*writable=*/true));
  }
};
} // namespace

void mlir::gated_attention::flash::populatePagedAttentionToNVGPUPatterns(
    RewritePatternSet &patterns, const NVGPUKernelOptions &options) {
  patterns.add<PagedAttentionToNVGPU>(patterns.getContext(), options);
}
