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

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashLaunch.h"

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
    SmallVector<Value> args = {q,     k,    v,  gate,    outFlat,
                               table, lens, cu, numSeqs, tableWidth};
    // A kernel's tiles: (ceildiv(T, queries per CTA) + B, Hq / packed
    // heads). The split kernel's may differ (an sm_90a op's is mma.sync).
    auto tiles = [&](const FlashKernelConfig &kernelCfg) {
      Value blocks = arith::CeilDivUIOp::create(rewriter, loc, numTokens,
                                                c(kernelCfg.queriesPerBlock()));
      Value x = arith::AddIOp::create(rewriter, loc, blocks, numSeqs);
      return std::pair{x, c(kernelCfg.numQueryHeads / kernelCfg.rowGroup())};
    };
    auto [gridX, gridY] = tiles(cfg);
    // CUDA rejects empty grids; without tokens there is nothing to write.
    Value nonEmpty = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ugt, numTokens, c(0));
    // Split-KV when the tiles alone leave the GPU idle (decode): the
    // number of splits from the grid and the table's capacity, host-side
    // sizes only (no lengths are read back).
    Value ctas = arith::MulIOp::create(rewriter, loc, gridX, gridY);
    Value capacity =
        arith::MulIOp::create(rewriter, loc, tableWidth, c(cfg.pageSize));
    Value splits = buildSplitCount(rewriter, loc, ctas, capacity);
    auto [splitX, splitY] = tiles(cfg.withRole(KernelRole::Split));
    launchDirectOrSplit(rewriter, loc, op->getParentOfType<ModuleOp>(), cfg,
                        kernel, nonEmpty, {gridX, gridY, c(1)}, splits,
                        numTokens, {splitX, splitY, splits}, args, args, gate,
                        outFlat);
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
