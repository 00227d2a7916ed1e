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
#include "GatedAttention/Conversion/ConvertAttentionOps.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashKernel.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/TmaPipeline.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/WgmmaAtom.h"
#include "GatedAttention/Conversion/NVGPUChips.h"
#include "GatedAttention/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

static std::string printSize(int64_t size) {
  return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
}

/// Returns the kernel for `cfg` in `module`, emitting it the first time.
static gpu::GPUFuncOp
getOrCreateKernel(ModuleOp module, const FlashKernelConfig &cfg, Location loc) {
  MLIRContext *ctx = module.getContext();
  std::string key = cfg.uniqueKey();
  std::string name = cfg.baseName();
  SymbolTable symbols(module);
  for (int n = 1;; ++n) {
    auto existing = symbols.lookup<gpu::GPUModuleOp>(name);
    if (!existing)
      break;
    auto func = existing.lookupSymbol<gpu::GPUFuncOp>(name);
    auto stamped = existing->getAttrOfType<StringAttr>("gated_attention.key");
    if (func && stamped && stamped.getValue() == key)
      return func;
    name = cfg.baseName() + "_" + std::to_string(n);
  }

  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, loc, name);
  gpuModule->setAttr("gated_attention.key", b.getStringAttr(key));
  symbols.insert(gpuModule);
  b.setInsertionPointToStart(gpuModule.getBody());
  auto buffer = MemRefType::get({ShapedType::kDynamic}, cfg.elementType);
  auto index = b.getIndexType();
  // The wgmma kernel reads Q, K and V through TMA maps.
  Type input = buffer;
  if (cfg.isWgmma())
    input = LLVM::LLVMPointerType::get(ctx);
  auto partial = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  SmallVector<Type> arguments = {input, input, input, buffer, buffer};
  if (cfg.isMerge()) {
    arguments = {buffer, buffer, partial, partial, index, index};
  } else if (cfg.isPaged()) {
    auto table = MemRefType::get({ShapedType::kDynamic}, b.getI32Type());
    arguments.append({table, table, table, index, index});
    if (cfg.isSplit())
      arguments.append({partial, partial, index, index});
  } else {
    arguments.append({index, index});
  }
  arguments.append(
      FlashKernelConfig::kStridesPerOperand * cfg.strideGroups().size(), index);
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(arguments, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(cfg.threads()), 1, 1}));
  // The description goes on the builtin.module, the one place that keeps
  // it through serialization (gpu.binary keeps no attributes).
  StringAttr launch = b.getStringAttr(cfg.describeLaunch(name));
  NamedAttrList kernels;
  if (auto existing =
          module->getAttrOfType<DictionaryAttr>("gated_attention.kernels"))
    kernels.append(existing.getValue());
  kernels.set(name, launch);
  module->setAttr("gated_attention.kernels", kernels.getDictionary(ctx));
  if (cfg.isWgmma()) {
    // ptxas drops setmaxnreg unless it knows the registers at entry; one
    // CTA per SM is what the kernel's shared memory allows anyway.
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(1));
    TmaPipeline::declareSharedMemory(b, loc, gpuModule);
    buildWgmmaFlashKernel(b, loc, cfg, func);
  } else if (cfg.isMerge()) {
    buildSplitMergeKernel(b, loc, cfg, func);
  } else {
    buildMmaSyncFlashKernel(b, loc, cfg, func);
  }
  return func;
}

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

namespace {
/// The kernel that serves `op` when `requested` is asked for: ops the wgmma
/// kernel does not take (head dims not multiples of 64) get the mma.sync
/// one, which runs on every chip.
static FlashKernelKind kernelFor(Operation *op, FlashKernelKind requested) {
  if (requested == FlashKernelKind::Wgmma &&
      !unsupportedReason(op, FlashKernelKind::Wgmma).empty())
    return FlashKernelKind::MmaSync;
  return requested;
}

/// The kernel for `op` (a dense or paged op) under `options`, or a match
/// failure saying why there is none: the op is left for the SIMT lowering
/// (the pass has already reported tiles the user chose that do not fit).
static FailureOr<FlashKernelConfig> configFor(Operation *op,
                                              const NVGPUKernelOptions &options,
                                              PatternRewriter &rewriter) {
  FlashKernelKind kind = kernelFor(
      op, options.wgmma ? FlashKernelKind::Wgmma : FlashKernelKind::MmaSync);
  std::string reason = unsupportedReason(op, kind);
  if (!reason.empty())
    return rewriter.notifyMatchFailure(op, reason);
  auto [numWarps, numKeysPerBlock] =
      chooseTiles(op, kind, options.warps, options.keyBlock);
  reason =
      tileError(op, kind, numWarps, numKeysPerBlock, options.maxSharedMemory);
  if (reason.empty())
    reason = layoutError(op, kind);
  if (!reason.empty())
    return rewriter.notifyMatchFailure(op, reason);
  if (!op->getParentOfType<ModuleOp>())
    return rewriter.notifyMatchFailure(op, "not inside a builtin.module");
  return FlashKernelConfig::get(op, kind, numWarps, numKeysPerBlock);
}

/// `buffer` (any rank, row-major) as the flat memref<?xT> a kernel takes.
static Value flatView(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  Value flat = memref::CollapseShapeOp::create(
      b, loc, buffer, SmallVector<ReassociationIndices>{all});
  auto flatType =
      MemRefType::get({ShapedType::kDynamic}, type.getElementType());
  if (flat.getType() == flatType)
    return flat;
  return memref::CastOp::create(b, loc, flatType, flat);
}

/// A flat memref<?xT> of `tensor`, for a kernel argument.
static Value flatBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Value buffer = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*readOnly=*/true);
  return flatView(b, loc, buffer);
}

/// The number of key splits of a paged launch of `ctas` CTAs over tables
/// of `capacity` keys per sequence: enough CTAs for kSplitTargetCTAs, each
/// split at least kMinKeysPerSplit keys of the capacity, at most
/// kMaxSplits (python/gated_attention/paged.py: choose_splits is the same
/// rule with the device's SM count).
static Value buildSplitCount(OpBuilder &b, Location loc,
                             const FlashKernelConfig &cfg, Value ctas,
                             Value capacity) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value target = c(kSplitTargetCTAs);
  Value wanted = arith::CeilDivUIOp::create(b, loc, target, ctas);
  Value perSplit = c(kMinKeysPerSplit);
  Value fitting = arith::CeilDivUIOp::create(b, loc, capacity, perSplit);
  Value most = arith::MinUIOp::create(b, loc, fitting, c(kMaxSplits));
  Value splits = arith::MinUIOp::create(b, loc, wanted, most);
  return arith::MaxUIOp::create(b, loc, splits, c(1));
}

/// Launches `kernel` of `cfg` on `grid` when `nonEmpty` (CUDA rejects empty
/// grids).
static void launchWhen(OpBuilder &b, Location loc, Value nonEmpty,
                       gpu::GPUFuncOp kernel, const FlashKernelConfig &cfg,
                       gpu::KernelDim3 grid, ValueRange args) {
  OpBuilder::InsertionGuard guard(b);
  auto ifOp = scf::IfOp::create(b, loc, nonEmpty);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value smem = arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(cfg.sharedMemoryBytes()));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value threads = arith::ConstantIndexOp::create(b, loc, cfg.threads());
  gpu::LaunchFuncOp::create(b, loc, kernel, grid,
                            gpu::KernelDim3{threads, one, one}, smem, args);
}

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
    // A TMA map of a [B, H, S, width] operand viewed as (B x H, S, width),
    // boxes of `rows` x 64 elements, made on the host (the runtime's
    // cuTensorMapEncodeTiled) and passed as a pointer to the map.
    auto tensorMap = [&](Value tensor, int64_t rows) -> Value {
      auto type = cast<RankedTensorType>(tensor.getType());
      Value buffer = bufferization::ToBufferOp::create(
          rewriter, loc,
          MemRefType::get(type.getShape(), type.getElementType()), tensor,
          /*readOnly=*/true);
      Value slabs = memref::CollapseShapeOp::create(
          rewriter, loc, buffer,
          SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
      Value unranked = memref::CastOp::create(
          rewriter, loc, UnrankedMemRefType::get(cfg.elementType, 0), slabs);
      auto box =
          MemRefType::get({1, rows, kSwizzleSpanElements}, cfg.elementType,
                          AffineMap(), rewriter.getI64IntegerAttr(3));
      auto mapType = nvgpu::TensorMapDescriptorType::get(
          rewriter.getContext(), box, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
          nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
          nvgpu::TensorMapOOBKind::OOB_ZERO,
          nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
      Value map = nvgpu::TmaCreateDescriptorOp::create(
          rewriter, loc, mapType, unranked,
          ValueRange{c(1), c(rows), c(kSwizzleSpanElements)});
      // The kernel takes the map as a pointer (a gpu.func argument of the
      // tensormap type does not legalize in MLIR 22); both lower to one.
      return UnrealizedConversionCastOp::create(
                 rewriter, loc,
                 LLVM::LLVMPointerType::get(rewriter.getContext()), map)
          .getResult(0);
    };
    SmallVector<Value> args;
    if (cfg.isWgmma()) {
      args = {tensorMap(op.getQuery(), cfg.queryBlock()),
              tensorMap(op.getKey(), cfg.keyBlock),
              tensorMap(op.getValue(), cfg.keyBlock)};
    } else {
      // (Separate statements: one order of the ops for every compiler.)
      Value q = flat("q", op.getQuery());
      Value k = flat("k", op.getKey());
      Value v = flat("v", op.getValue());
      args = {q, k, v};
    }
    // Without a gate the kernel never reads its gate argument: pass the
    // output.
    Value gate = op.hasGate() ? flat("gate", op.getGateInput()) : Value();
    std::pair<Value, Value> out =
        kernelBuffer("out", outBuffer, /*copyIn=*/false);
    if (!gate) {
      gate = out.first;
      stridesOf["gate"] = stridesOf["out"];
    }
    args.append({gate, out.first, numRows, numKeys});
    // Each group's strides are those of its first buffer: row-major K and V
    // of one width (or laid out alike) have the same.
    for (ArrayRef<StringRef> group : cfg.strideGroups())
      llvm::append_range(args, stridesOf[group.front()]);
    Value gridX =
        arith::CeilDivUIOp::create(rewriter, loc, numRows, c(cfg.queryBlock()));
    // CUDA rejects empty grids: launch only when there is a row to compute.
    Value nonEmpty = arith::AndIOp::create(
        rewriter, loc,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt, gridX,
                              c(0)),
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt,
                              numBatches, c(0)));
    launchWhen(rewriter, loc, nonEmpty, kernel, cfg,
               {gridX, c(cfg.numQueryHeads), numBatches}, args);
    if (out.second != outBuffer)
      memref::CopyOp::create(rewriter, loc, out.second, outBuffer);
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, resultType, outBuffer,
                               /*restrict=*/true, /*writable=*/true));
  }
};

/// A paged_attention becomes a launch of the paged kernel on its flat
/// buffers: grid (ceildiv(T, queries per CTA) + B, Hq / packed heads);
/// lengths, offsets and the block table stay in device memory, read by the
/// kernel.
/// (The sm_90a kernel does not read paged caches: mma.sync serves them.)
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
    Value gridX = arith::AddIOp::create(
        rewriter, loc,
        arith::CeilDivUIOp::create(rewriter, loc, numTokens,
                                   c(cfg.queriesPerBlock())),
        numSeqs);
    // CUDA rejects empty grids; without tokens there is nothing to write.
    Value nonEmpty = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ugt, numTokens, c(0));
    Value gridY = c(cfg.numQueryHeads / cfg.rowGroup());
    // Split-KV when the tiles alone leave the GPU idle (decode): the
    // number of splits from the grid and the table's capacity, host-side
    // sizes only (no lengths are read back).
    Value ctas = arith::MulIOp::create(rewriter, loc, gridX, gridY);
    Value capacity =
        arith::MulIOp::create(rewriter, loc, tableWidth, c(cfg.pageSize));
    Value splits = buildSplitCount(rewriter, loc, cfg, ctas, capacity);
    Value split = arith::AndIOp::create(
        rewriter, loc, nonEmpty,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt, splits,
                              c(1)));
    auto ifSplit = scf::IfOp::create(rewriter, loc, split, true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifSplit.thenBlock());
      auto module = op->getParentOfType<ModuleOp>();
      FlashKernelConfig splitCfg = cfg.withPagedKernel(PagedKernel::Split);
      FlashKernelConfig mergeCfg = cfg.withPagedKernel(PagedKernel::Merge);
      gpu::GPUFuncOp splitKernel = getOrCreateKernel(module, splitCfg, loc);
      gpu::GPUFuncOp mergeKernel = getOrCreateKernel(module, mergeCfg, loc);
      // Partials: [splits, T, Hq, Dv] and [splits, T, Hq] f32.
      Value splitTokens =
          arith::MulIOp::create(rewriter, loc, splits, numTokens);
      Value rows = arith::MulIOp::create(rewriter, loc, splitTokens,
                                         c(cfg.numQueryHeads));
      auto f32 = rewriter.getF32Type();
      auto flatF32 = MemRefType::get({ShapedType::kDynamic}, f32);
      Value partialOut = memref::AllocOp::create(
          rewriter, loc, flatF32,
          ValueRange{
              arith::MulIOp::create(rewriter, loc, rows, c(cfg.valueHeadDim))});
      Value partialLse =
          memref::AllocOp::create(rewriter, loc, flatF32, ValueRange{rows});
      SmallVector<Value> splitArgs(args);
      splitArgs.append({partialOut, partialLse, splits, numTokens});
      launchWhen(rewriter, loc, split, splitKernel, splitCfg,
                 {gridX, gridY, splits}, splitArgs);
      launchWhen(rewriter, loc, split, mergeKernel, mergeCfg,
                 {numTokens, c(cfg.numQueryHeads), c(1)},
                 {gate, outFlat, partialOut, partialLse, numTokens, splits});
      memref::DeallocOp::create(rewriter, loc, partialOut);
      memref::DeallocOp::create(rewriter, loc, partialLse);
      rewriter.setInsertionPointToStart(ifSplit.elseBlock());
      launchWhen(rewriter, loc, nonEmpty, kernel, cfg, {gridX, gridY, c(1)},
                 args);
    }
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, resultType, outBuffer,
                               /*restrict=*/true, /*writable=*/true));
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
    NVGPUKernelOptions options;
    // `auto` keeps the mma.sync kernel until the wgmma one has been
    // validated on a GPU (issue 12).
    options.wgmma = kernel == "wgmma";
    options.warps = warps;
    options.keyBlock = keyBlock;
    options.maxSharedMemory = target->maxSharedMemoryPerBlock;
    // Tiles the user chose must fit every op the kernel covers: falling back
    // to the SIMT kernel would silently ignore them.
    bool fits = true;
    getOperation()->walk([&](Operation *op) {
      if (!isa<AttentionOp, PagedAttentionOp>(op))
        return;
      FlashKernelKind kind =
          kernelFor(op, options.wgmma ? FlashKernelKind::Wgmma
                                      : FlashKernelKind::MmaSync);
      if (!unsupportedReason(op, kind).empty())
        return;
      // The grid is (row blocks, Hq, B), or (blocks, Hq) for paged ops;
      // CUDA caps its y and z at 65535.
      FlashKernelConfig shape = FlashKernelConfig::get(op, kind);
      int64_t batch = 1;
      if (auto dense = dyn_cast<AttentionOp>(op))
        batch = dense.getQueryType().getDimSize(0);
      if (shape.numQueryHeads > kMaxGridYZ || batch > kMaxGridYZ) {
        op->emitError() << "tensor-core kernel: Hq = " << shape.numQueryHeads
                        << " and B = " << printSize(batch)
                        << " must be at most " << kMaxGridYZ
                        << " (CUDA's grid y and z limit)";
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
      if (isa<AttentionOp, PagedAttentionOp>(op))
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
  patterns.add<AttentionToNVGPU, PagedAttentionToNVGPU>(patterns.getContext(),
                                                        options);
}
