//===- BackwardToNVGPU.cpp - the backward op as kernel launches -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The pattern that replaces a gated_attention.attention_backward by
// launches of its three kernels (BackwardKernels.h; on sm_90a with
// kernel=wgmma the dK/dV and dQ ones are wgmma's where the head dims fit
// them, reading K and V through TMA maps) on flattened buffers: the
// preprocessing writes D (f32), dY and dG; then the dK/dV kernel and the dQ
// kernel, which both read L (the op's lse operand) and D.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "FlashLaunch.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"
#include "KernelInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

std::string flash::backwardUnsupportedReason(AttentionBackwardOp op) {
  Type element = op.getQueryType().getElementType();
  if (!element.isF16() && !element.isBF16())
    return std::string("the backward kernels take f16 or bf16, not ") +
           (element.isF64() ? "f64" : "f32");
  int64_t d = op.getHeadDim(), dv = op.getValueHeadDim();
  // (Above 128 two warps split the columns, 16 each at least.)
  int64_t width = std::max(d, dv);
  int64_t multiple = width > 128 ? 32 : 16;
  if (d % multiple || dv % multiple || width > 256)
    return "the backward kernels take head dims that are multiples of 16 up "
           "to 128, or of 32 up to 256, got D = " +
           std::to_string(d) + ", Dv = " + std::to_string(dv);
  if (!op.hasLse())
    return "the backward kernels read the forward's log-sum-exp: give the "
           "op its lse operand (the forward's lse result)";
  if (backwardRecomputesOutput(op.hasGate() ? op.getGateAttr() : Attribute(),
                               op.getCombine()))
    return "the backward kernels read D and dG from the saved output; gate "
           "and combine that need the ungated output recomputed (SiLU, "
           "combine = add, a gate without act'/act) are not supported";
  return sizeLimitError(op);
}

std::string flash::backwardWgmmaUnsupportedReason(AttentionBackwardOp op) {
  // Whole 128-byte column atoms per consumer warpgroup: above 128 columns
  // two split them.
  int64_t d = op.getHeadDim(), dv = op.getValueHeadDim();
  int64_t split = std::max(d, dv) > 128 ? 2 : 1;
  if (d % (64 * split) || dv % (64 * split) || std::max(d, dv) > 256)
    return "the sm_90a dK/dV kernel takes head dims of 64 or 128, or 128 "
           "and 256 above 128";
  return "";
}

namespace {
struct BackwardToNVGPU : OpRewritePattern<AttentionBackwardOp> {
  BackwardToNVGPU(MLIRContext *ctx, bool wgmma)
      : OpRewritePattern(ctx), wgmma(wgmma) {}

  LogicalResult matchAndRewrite(AttentionBackwardOp op,
                                PatternRewriter &rewriter) const override {
    std::string reason = backwardUnsupportedReason(op);
    if (!reason.empty())
      return rewriter.notifyMatchFailure(op, reason);
    auto module = op->getParentOfType<ModuleOp>();
    if (!module)
      return rewriter.notifyMatchFailure(op, "not inside a builtin.module");
    Location loc = op.getLoc();
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    Value numBatches = tensor::DimOp::create(rewriter, loc, op.getQuery(), 0);
    Value numRows = tensor::DimOp::create(rewriter, loc, op.getQuery(), 2);
    Value numKeys = tensor::DimOp::create(rewriter, loc, op.getKey(), 2);
    // A fresh buffer of `type` ([B, H, S, W]: B and S dynamic or not).
    auto allocate = [&](RankedTensorType type, Value rows) -> Value {
      SmallVector<Value> sizes;
      if (type.isDynamicDim(0))
        sizes.push_back(numBatches);
      if (type.isDynamicDim(2))
        sizes.push_back(rows);
      return memref::AllocOp::create(
          rewriter, loc,
          MemRefType::get(type.getShape(), type.getElementType()), sizes);
    };
    LaunchValues values{{"Sq", numRows}, {"Skv", numKeys}, {"B", numBatches}};
    values["q"] = flatBuffer(rewriter, loc, op.getQuery());
    values["k"] = flatBuffer(rewriter, loc, op.getKey());
    values["v"] = flatBuffer(rewriter, loc, op.getValue());
    values["out"] = flatBuffer(rewriter, loc, op.getOutput());
    values["dout"] = flatBuffer(rewriter, loc, op.getOutputGrad());
    values["lse"] = flatBuffer(rewriter, loc, op.getLse());
    // D: one f32 per query row.
    Value rowsPerBatch =
        arith::MulIOp::create(rewriter, loc, numRows, c(op.getNumQueryHeads()));
    Value rowCount =
        arith::MulIOp::create(rewriter, loc, rowsPerBatch, numBatches);
    values["delta"] = memref::AllocOp::create(
        rewriter, loc,
        MemRefType::get({ShapedType::kDynamic}, rewriter.getF32Type()),
        ValueRange{rowCount});
    SmallVector<Value> results;
    Value dq = allocate(op.getQueryType(), numRows);
    Value dk = allocate(op.getKeyType(), numKeys);
    Value dv = allocate(op.getValueType(), numKeys);
    values["dq"] = flatView(rewriter, loc, dq);
    values["dk"] = flatView(rewriter, loc, dk);
    values["dv"] = flatView(rewriter, loc, dv);
    results = {dq, dk, dv};
    if (op.hasGate()) {
      values["gate"] = flatBuffer(rewriter, loc, op.getGateInput());
      Value dg = allocate(op.getGateType(), numRows);
      values["dg"] = flatView(rewriter, loc, dg);
      values["do"] =
          flatView(rewriter, loc, allocate(op.getOutputType(), numRows));
      results.push_back(dg);
    } else {
      // Without a gate dY is dOut, and the preprocessing writes only D
      // (the gate's arguments are never read: pass dOut).
      values["do"] = values["dout"];
      values["gate"] = values["dout"];
      values["dg"] = values["dout"];
    }

    auto positive = [&](Value x) {
      return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt, x,
                                   c(0));
    };
    Value hasBatches = positive(numBatches);
    Value hasRows =
        arith::AndIOp::create(rewriter, loc, hasBatches, positive(numRows));
    Value hasKeys =
        arith::AndIOp::create(rewriter, loc, hasBatches, positive(numKeys));
    // (Every row and key gets its gradient: with Skv = 0 the dQ kernel
    // writes zeros, with Sq = 0 the dK/dV kernel does.)
    for (auto [role, nonEmpty] :
         {std::pair{KernelRole::BackwardPreprocess, hasRows},
          std::pair{KernelRole::BackwardKeyValue, hasKeys},
          std::pair{KernelRole::BackwardQuery, hasRows}}) {
      FlashKernelKind kind = wgmma && backwardWgmmaUnsupportedReason(op).empty()
                                 ? FlashKernelKind::Wgmma
                                 : FlashKernelKind::MmaSync;
      FlashKernelConfig cfg = FlashKernelConfig::getBackward(op, role, kind);
      gpu::GPUFuncOp kernel = getOrCreateKernel(module, cfg, loc);
      // The wgmma dK/dV and dQ kernels read K and V through TMA maps, boxes
      // of their tiles' keys.
      LaunchValues kernelValues = values;
      KernelInterface iface = KernelInterface::get(cfg);
      if (role != KernelRole::BackwardPreprocess &&
          iface.lookup("k").kind == ArgumentKind::TensorMap) {
        int64_t rows = iface.lookup("k").boxRows;
        kernelValues["k"] = tensorMapOf(rewriter, loc, op.getKey(), rows);
        kernelValues["v"] = tensorMapOf(rewriter, loc, op.getValue(), rows);
      }
      launchWhen(rewriter, loc, nonEmpty, kernel, cfg, kernelValues);
    }
    SmallVector<Value> tensors;
    for (auto [buffer, result] : llvm::zip(results, op.getResults()))
      tensors.push_back(bufferization::ToTensorOp::create(
          rewriter, loc, result.getType(), buffer, /*restrict=*/true,
          /*writable=*/true));
    rewriter.replaceOp(op, tensors);
    return success();
  }

  bool wgmma;
};
} // namespace

void flash::populateBackwardToNVGPUPatterns(RewritePatternSet &patterns,
                                            bool wgmma) {
  patterns.add<BackwardToNVGPU>(patterns.getContext(), wgmma);
}
