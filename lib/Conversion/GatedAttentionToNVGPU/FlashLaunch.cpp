//===- FlashLaunch.cpp - host side of the flash kernels' launches ---------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "FlashLaunch.h"
#include "BackwardKernels.h"
#include "FlashKernel.h"
#include "TmaPipeline.h"
#include "WgmmaAtom.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

gpu::GPUFuncOp flash::getOrCreateKernel(ModuleOp module,
                                        const FlashKernelConfig &cfg,
                                        Location loc) {
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
  KernelInterface iface = KernelInterface::get(cfg);
  auto func = gpu::GPUFuncOp::create(b, loc, name, iface.getFunctionType(ctx));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(iface.threads()), 1, 1}));
  // The description goes on the builtin.module, the one place that keeps
  // it through serialization (gpu.binary keeps no attributes).
  StringAttr launch = b.getStringAttr(iface.describe(name));
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
    if (cfg.role == KernelRole::BackwardKeyValue)
      buildBackwardKeyValueWgmmaKernel(b, loc, cfg, func);
    else if (cfg.role == KernelRole::BackwardQuery)
      buildBackwardQueryWgmmaKernel(b, loc, cfg, func);
    else
      buildWgmmaFlashKernel(b, loc, cfg, func);
  } else if (cfg.isMerge()) {
    buildSplitMergeKernel(b, loc, cfg, func);
  } else if (cfg.role == KernelRole::BackwardPreprocess) {
    buildBackwardPreprocessKernel(b, loc, cfg, func);
  } else if (cfg.role == KernelRole::BackwardKeyValue) {
    buildBackwardKeyValueKernel(b, loc, cfg, func);
  } else if (cfg.role == KernelRole::BackwardQuery) {
    buildBackwardQueryKernel(b, loc, cfg, func);
  } else {
    buildMmaSyncFlashKernel(b, loc, cfg, func);
  }
  return func;
}

FlashKernelKind flash::kernelFor(Operation *op, FlashKernelKind requested) {
  if (requested == FlashKernelKind::Wgmma &&
      !unsupportedReason(op, FlashKernelKind::Wgmma).empty())
    return FlashKernelKind::MmaSync;
  return requested;
}

FailureOr<FlashKernelConfig> flash::configFor(Operation *op,
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
  FlashKernelConfig cfg =
      FlashKernelConfig::get(op, kind, numWarps, numKeysPerBlock);
  cfg.persistent = options.persistent && cfg.isWgmma() &&
                   cfg.role == KernelRole::Direct && !cfg.isPaged();
  return cfg;
}

Value flash::flatView(OpBuilder &b, Location loc, Value buffer) {
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

Value flash::flatBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Value buffer = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*readOnly=*/true);
  return flatView(b, loc, buffer);
}

Value flash::tensorMapOf(OpBuilder &b, Location loc, Value tensor,
                         int64_t rows) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Type element = type.getElementType();
  Value buffer = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), element), tensor,
      /*readOnly=*/true);
  Value slabs = memref::CollapseShapeOp::create(
      b, loc, buffer, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
  Value unranked = memref::CastOp::create(
      b, loc, UnrankedMemRefType::get(element, 0), slabs);
  auto box = MemRefType::get({1, rows, kSwizzleSpanElements}, element,
                             AffineMap(), b.getI64IntegerAttr(3));
  auto mapType = nvgpu::TensorMapDescriptorType::get(
      b.getContext(), box, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  // (Separate statements: one order of the ops for every compiler.)
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value boxRows = arith::ConstantIndexOp::create(b, loc, rows);
  Value boxColumns =
      arith::ConstantIndexOp::create(b, loc, kSwizzleSpanElements);
  auto pointer = LLVM::LLVMPointerType::get(b.getContext());
  // cuTensorMapEncodeTiled rejects a dimension of 0 (and the runtime
  // prints its error): an empty tensor, whose launch is skipped, gets a
  // null map instead.
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value nonEmpty;
  for (int64_t dim = 0; dim < type.getRank(); ++dim) {
    Value size = memref::DimOp::create(b, loc, buffer, dim);
    Value positive =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, size, zero);
    nonEmpty =
        nonEmpty ? arith::AndIOp::create(b, loc, nonEmpty, positive).getResult()
                 : positive;
  }
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{pointer}, nonEmpty,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value map = nvgpu::TmaCreateDescriptorOp::create(
      b, loc, mapType, unranked, ValueRange{one, boxRows, boxColumns});
  // The kernel takes the map as a pointer (a gpu.func argument of the
  // tensormap type does not legalize in MLIR 22); both lower to one.
  Value mapPointer =
      UnrealizedConversionCastOp::create(b, loc, pointer, map).getResult(0);
  scf::YieldOp::create(b, loc, mapPointer);
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc,
                       LLVM::ZeroOp::create(b, loc, pointer).getResult());
  return ifOp.getResult(0);
}

void flash::launchWhen(OpBuilder &b, Location loc, Value nonEmpty,
                       gpu::GPUFuncOp kernel, const FlashKernelConfig &cfg,
                       const LaunchValues &values, int64_t smCount) {
  OpBuilder::InsertionGuard guard(b);
  auto ifOp = scf::IfOp::create(b, loc, nonEmpty);
  b.setInsertionPointToStart(ifOp.thenBlock());
  KernelInterface iface = KernelInterface::get(cfg);
  gpu::KernelDim3 grid = iface.buildGrid(b, loc, values, smCount);
  Value smem = arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(iface.sharedMemoryBytes()));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value threads = arith::ConstantIndexOp::create(b, loc, iface.threads());
  gpu::LaunchFuncOp::create(b, loc, kernel, grid,
                            gpu::KernelDim3{threads, one, one}, smem,
                            iface.launchOperands(values));
}

Value flash::buildSplitCount(OpBuilder &b, Location loc, Value ctas,
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

void flash::launchDirectOrSplit(OpBuilder &b, Location loc, ModuleOp module,
                                const FlashKernelConfig &cfg,
                                gpu::GPUFuncOp kernel, Value nonEmpty,
                                Value splits, const LaunchValues &values,
                                LaunchValues splitValues, int64_t smCount) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value manySplits =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, splits, c(1));
  Value split = arith::AndIOp::create(b, loc, nonEmpty, manySplits);
  auto ifSplit = scf::IfOp::create(b, loc, split, true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifSplit.thenBlock());
  FlashKernelConfig splitCfg = cfg.withRole(KernelRole::Split);
  FlashKernelConfig mergeCfg = cfg.withRole(KernelRole::Merge);
  gpu::GPUFuncOp splitKernel = getOrCreateKernel(module, splitCfg, loc);
  gpu::GPUFuncOp mergeKernel = getOrCreateKernel(module, mergeCfg, loc);
  // Partials: [splits, T, Hq, Dv] and [splits, T, Hq] f32, freed after the
  // merge by buffer deallocation (the PTX pipeline runs it on the host code).
  Value numTokens = splitValues.lookup("T");
  Value splitTokens = arith::MulIOp::create(b, loc, splits, numTokens);
  Value rows = arith::MulIOp::create(b, loc, splitTokens, c(cfg.numQueryHeads));
  auto flatF32 = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  Value partialOut = memref::AllocOp::create(
      b, loc, flatF32,
      ValueRange{arith::MulIOp::create(b, loc, rows, c(cfg.valueHeadDim))});
  Value partialLse = memref::AllocOp::create(b, loc, flatF32, ValueRange{rows});
  splitValues["o_partial"] = partialOut;
  splitValues["lse_partial"] = partialLse;
  splitValues["splits"] = splits;
  launchWhen(b, loc, split, splitKernel, splitCfg, splitValues);
  LaunchValues mergeValues{{"gate", values.lookup("gate")},
                           {"out", values.lookup("out")},
                           {"o_partial", partialOut},
                           {"lse_partial", partialLse},
                           {"T", numTokens},
                           {"splits", splits}};
  if (Value lse = values.lookup("lse"))
    mergeValues["lse"] = lse;
  launchWhen(b, loc, split, mergeKernel, mergeCfg, mergeValues);
  b.setInsertionPointToStart(ifSplit.elseBlock());
  launchWhen(b, loc, nonEmpty, kernel, cfg, values, smCount);
}
