//===- GatedAttentionToNVGPU.cpp - the tensor-core flash kernel -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The pattern and pass that replace a gated_attention.attention by a launch
// of a tensor-core flash kernel: the kernel is built once per configuration
// (FlashKernelConfig.h) into a gpu.module of its own, its launch
// description is recorded on the builtin.module, and the op becomes a
// gpu.launch_func on flattened buffers. The kernel itself is put together
// from the pieces declared beside FlashKernel.h.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/GatedAttentionToNVGPU.h"
#include "BackwardKernels.h"
#include "FlashLaunch.h"
#include "GatedAttention/Conversion/ConvertAttentionOps.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/LaunchEffects.h"
#include "GatedAttention/Conversion/NVGPUChips.h"
#include "GatedAttention/Conversion/Passes.h"
#include "TmaPipeline.h"
#include "WgmmaAtom.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_CONVERTGATEDATTENTIONTONVGPUPASS
#include "GatedAttention/Conversion/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

/// A fresh flat buffer holding [B, H, S, W] `buffer` (row-major) with its
/// rows `rowStride` elements apart, and its 4-D view; `buffer` is copied in
/// when `copyIn`.
static std::pair<Value, Value> allocateWithRowStride(OpBuilder &b, Location loc,
                                                     Value buffer,
                                                     int64_t rowStride,
                                                     bool copyIn) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < 4; ++i)
    sizes.push_back(memref::getMixedSize(b, loc, buffer, i));
  auto size = [&](int64_t i) {
    return getValueOrCreateConstantIndexOp(b, loc, sizes[i]);
  };
  Value rows = size(2);
  Value stride = arith::ConstantIndexOp::create(b, loc, rowStride);
  Value headStride = arith::MulIOp::create(b, loc, rows, stride);
  Value batchStride = arith::MulIOp::create(b, loc, size(1), headStride);
  Value total = arith::MulIOp::create(b, loc, size(0), batchStride);
  Value flat = memref::AllocOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, type.getElementType()),
      ValueRange{total});
  auto viewType = MemRefType::get(
      type.getShape(), type.getElementType(),
      StridedLayoutAttr::get(
          b.getContext(), 0,
          {ShapedType::kDynamic, ShapedType::kDynamic, rowStride, 1}));
  Value view = memref::ReinterpretCastOp::create(
      b, loc, viewType, flat, b.getIndexAttr(0), sizes,
      SmallVector<OpFoldResult>{batchStride, headStride,
                                b.getIndexAttr(rowStride), b.getIndexAttr(1)});
  if (copyIn)
    memref::CopyOp::create(b, loc, buffer, view);
  return {flat, view};
}

/// Whether `op` is a decode step that split-KV serves: a static Sq = 1
/// (ops of dynamic Sq keep one kernel: a decode kernel pair for each would
/// double their compile) and a gate and output of packed rows, which the
/// merge kernel reads and writes as [T = B, H, W]. The split kernel is
/// mma.sync's for either kernel (withRole).
static bool isDecodeStep(AttentionOp op, const FlashKernelConfig &cfg) {
  return op.getQueryType().getDimSize(2) == 1 &&
         cfg.rowStride("out") == cfg.valueHeadDim &&
         (!cfg.hasGate || cfg.rowStride("gate") == cfg.gateWidth);
}

namespace {
struct AttentionToNVGPU : ToFlashKernel<AttentionOp> {
  using ToFlashKernel::ToFlashKernel;

  void launch(AttentionOp op, const FlashKernelConfig &cfg,
              gpu::GPUFuncOp kernel, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();

    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    // The kernel takes each buffer with its (batch, head) strides and rows
    // cfg.rowStride apart. Buffers here are row-major (bufferization copies
    // what is not), so the strides launchers outside MLIR use for views
    // (gated_attention.row_strides) mean a copy into a buffer laid out so:
    // returns the flat buffer and its 4-D view, and notes the view's
    // strides as those of `name`.
    llvm::StringMap<ValueRange> stridesOf;
    auto kernelBuffer = [&](StringRef name, Value buffer,
                            bool copyIn) -> std::pair<Value, Value> {
      int64_t rowStride = cfg.rowStride(name);
      Value view = buffer, flatBuffer;
      if (rowStride == cast<MemRefType>(buffer.getType()).getDimSize(3))
        flatBuffer = flatView(rewriter, loc, buffer);
      else
        std::tie(flatBuffer, view) =
            allocateWithRowStride(rewriter, loc, buffer, rowStride, copyIn);
      auto metadata =
          memref::ExtractStridedMetadataOp::create(rewriter, loc, view);
      stridesOf[name] = metadata.getStrides().take_front(2);
      return {flatBuffer, view};
    };
    auto flat = [&](StringRef name, Value tensor) {
      auto type = cast<RankedTensorType>(tensor.getType());
      Value buffer = bufferization::ToBufferOp::create(
          rewriter, loc,
          MemRefType::get(type.getShape(), type.getElementType()), tensor,
          /*readOnly=*/true);
      return kernelBuffer(name, buffer, /*copyIn=*/true).first;
    };
    auto dim = [&](Value tensor, int64_t i) -> Value {
      return tensor::DimOp::create(rewriter, loc, tensor, i);
    };
    Value numBatches = dim(op.getQuery(), 0);
    Value numRows = dim(op.getQuery(), 2);
    Value numKeys = dim(op.getKey(), 2);
    RankedTensorType resultType = op.getResultType();
    Value outBuffer = allocateResultBuffer(rewriter, op, numBatches, numRows);
    // The log-sum-exp, [B, Hq, Sq]-contiguous, where the op returns it.
    Value lseBuffer, lseFlat;
    if (op.hasLse()) {
      lseBuffer = allocateResultBuffer(
          rewriter, loc, cast<RankedTensorType>(op.getLse().getType()),
          numBatches, numRows);
      lseFlat = flatView(rewriter, loc, lseBuffer);
    }
    // The direct kernel's values, and the split kernel's: the same but for
    // an sm_90a decode step, whose split kernel (mma.sync) reads buffers
    // where the direct one reads TMA maps.
    bool decode = isDecodeStep(op, cfg);
    LaunchValues values, splitValues;
    if (cfg.isWgmma()) {
      values["q"] = tensorMapOf(rewriter, loc, op.getQuery(), cfg.queryBlock());
      values["k"] = tensorMapOf(rewriter, loc, op.getKey(), cfg.keyBlock);
      values["v"] = tensorMapOf(rewriter, loc, op.getValue(), cfg.keyBlock);
    }
    if (!cfg.isWgmma() || decode) {
      // (Separate statements: one order of the ops for every compiler.)
      splitValues["q"] = flat("q", op.getQuery());
      splitValues["k"] = flat("k", op.getKey());
      splitValues["v"] = flat("v", op.getValue());
    }
    if (!cfg.isWgmma())
      values = splitValues;
    // Without a gate the kernel never reads its gate argument: pass the
    // output.
    Value gate = op.hasGate() ? flat("gate", op.getGateInput()) : Value();
    std::pair<Value, Value> out =
        kernelBuffer("out", outBuffer, /*copyIn=*/false);
    if (!gate) {
      gate = out.first;
      stridesOf["gate"] = stridesOf["out"];
    }
    // The strides a kernel takes are those of the first buffer of each
    // group: row-major K and V of one width (or laid out alike) have the
    // same.
    for (LaunchValues *to : {&values, &splitValues}) {
      LaunchValues &named = *to;
      named["gate"] = gate;
      named["out"] = out.first;
      if (lseBuffer)
        named["lse"] = lseFlat;
      named["Sq"] = numRows;
      named["Skv"] = numKeys;
      named["B"] = numBatches;
      for (const auto &entry : stridesOf) {
        named[(entry.getKey() + ".B").str()] = entry.getValue()[0];
        named[(entry.getKey() + ".H").str()] = entry.getValue()[1];
      }
    }
    // CUDA rejects empty grids: launch only when there is a row to compute.
    Value nonEmpty = arith::AndIOp::create(
        rewriter, loc,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt, numRows,
                              c(0)),
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt,
                              numBatches, c(0)));
    if (!decode) {
      launchWhen(rewriter, loc, nonEmpty, kernel, cfg, values, options.smCount);
    } else {
      // A decode step (Sq = 1) whose tiles leave the GPU idle: split-KV,
      // each tile's keys split across CTAs and the gate applied once in the
      // merge. A split kernel's CTA packs rowGroup heads of one K/V head, so
      // a split has B x Hq / rowGroup CTAs; the splits from those and Skv
      // (host sizes). A decode step's tokens are its sequences.
      int64_t packedHeads =
          cfg.numQueryHeads / cfg.withRole(KernelRole::Split).rowGroup();
      Value ctas =
          arith::MulIOp::create(rewriter, loc, numBatches, c(packedHeads));
      Value splits = buildSplitCount(rewriter, loc, ctas, numKeys);
      splitValues["T"] = numBatches;
      launchDirectOrSplit(rewriter, loc, op->getParentOfType<ModuleOp>(), cfg,
                          kernel, nonEmpty, splits, values, splitValues,
                          options.smCount);
    }
    if (out.second != outBuffer)
      memref::CopyOp::create(rewriter, loc, out.second, outBuffer);
    SmallVector<Value, 2> results = {bufferization::ToTensorOp::create(
        rewriter, loc, resultType, outBuffer, /*restrict=*/true,
        /*writable=*/true)};
    if (lseBuffer)
      results.push_back(bufferization::ToTensorOp::create(
          rewriter, loc, op.getLse().getType(), lseBuffer, /*restrict=*/true,
          /*writable=*/true));
    rewriter.replaceOp(op, results);
  }
};

struct ConvertGatedAttentionToNVGPUPass
    : gated_attention::impl::ConvertGatedAttentionToNVGPUPassBase<
          ConvertGatedAttentionToNVGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    const NVGPUChip *target = lookupNVGPUChip(chip);
    if (!target) {
      getOperation()->emitError()
          << "unknown chip '" << chip << "'; expected " << supportedChipList();
      return signalPassFailure();
    }
    if (!isKnownNVGPUKernel(kernel)) {
      getOperation()->emitError()
          << "unknown kernel '" << kernel << "'; expected " << kNVGPUKernelList;
      return signalPassFailure();
    }
    if (kernel == "wgmma" && !target->hasWgmma) {
      getOperation()->emitError()
          << "kernel=wgmma needs chip=sm_90a (wgmma and setmaxnreg exist only "
             "on sm_90a), got chip="
          << chip;
      return signalPassFailure();
    }
    int64_t sms = smCount;
    if (sms < 0 || sms > kMaxSMCount) {
      getOperation()->emitError() << "sm-count must be in [0, " << kMaxSMCount
                                  << "] (0: one CTA per tile), got " << sms;
      return signalPassFailure();
    }
    // A count that sizes nothing is a mistake, not a no-op.
    if (sms && !persistent) {
      getOperation()->emitError()
          << "sm-count=" << sms
          << " sizes the persistent kernel's grid: it needs persistent=1";
      return signalPassFailure();
    }
    // The launches added here are synchronous, and so must be the ones
    // already there: the host code frees buffers after their launches.
    if (failed(verifyLaunchesAreSynchronous(getOperation())))
      return signalPassFailure();
    NVGPUKernelOptions options;
    // `auto` on sm_90a takes the wgmma forward (checked and measured on an
    // H200: bench/README.md) unless the user's warps are a count it cannot
    // run; the wgmma backward waits for its own GPU run.
    options.wgmma =
        kernel == "wgmma" || (kernel == "auto" && target->hasWgmma &&
                              (warps == 0 || warps == 4 || warps == 8));
    options.backwardWgmma = kernel == "wgmma";
    options.persistent = persistent;
    options.smCount = sms;
    options.warps = warps;
    options.keyBlock = keyBlock;
    options.maxSharedMemory = target->maxSharedMemoryPerBlock;
    // Tiles the user chose must fit every op the kernel covers: falling back
    // to the SIMT kernel would silently ignore them.
    bool fits = true;
    getOperation()->walk([&](Operation *op) {
      // The backward has no other GPU lowering: an op its kernels do not
      // take is an error.
      if (auto backward = dyn_cast<AttentionBackwardOp>(op)) {
        std::string reason = backwardUnsupportedReason(backward);
        if (!reason.empty()) {
          op->emitError() << "no GPU lowering of the backward: " << reason;
          fits = false;
        }
        return;
      }
      if (!isa<AttentionOp, PagedAttentionOp>(op))
        return;
      FlashKernelKind kind =
          kernelFor(op, options.wgmma ? FlashKernelKind::Wgmma
                                      : FlashKernelKind::MmaSync);
      if (!unsupportedReason(op, kind).empty())
        return;
      // An op too large for the kernel's indices is an error, not a SIMT
      // kernel: the user asked for tensor cores.
      if (std::string error = sizeLimitError(op); !error.empty()) {
        op->emitError() << "tensor-core kernel: " << error;
        fits = false;
        return;
      }
      auto [numWarps, numKeysPerBlock] = chooseTiles(op, kind, warps, keyBlock);
      std::string error = tileError(op, kind, numWarps, numKeysPerBlock,
                                    options.maxSharedMemory);
      if (error.empty())
        error = layoutError(op, kind);
      if (!error.empty()) {
        op->emitError() << "tensor-core kernel for " << chip << ": " << error;
        fits = false;
      }
    });
    if (!fits)
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateGatedAttentionToNVGPUPatterns(patterns, options);
    // Ops the kernel does not cover (f32, odd head dims) are left for the
    // SIMT lowering.
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<AttentionOp, PagedAttentionOp, AttentionBackwardOp>(op))
        ops.push_back(op);
    });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    (void)applyOpPatternsGreedily(ops, std::move(patterns), config);
  }
};
} // namespace

void mlir::gated_attention::populateGatedAttentionToNVGPUPatterns(
    RewritePatternSet &patterns, const NVGPUKernelOptions &options) {
  patterns.add<AttentionToNVGPU>(patterns.getContext(), options);
  flash::populatePagedAttentionToNVGPUPatterns(patterns, options);
  flash::populateBackwardToNVGPUPatterns(patterns, options.backwardWgmma);
}
