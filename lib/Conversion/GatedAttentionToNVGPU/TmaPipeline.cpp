//===- TmaPipeline.cpp - the sm_90a kernel's copy pipeline ----------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/TmaPipeline.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/WgmmaAtom.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

TmaSharedLayout TmaSharedLayout::get(const FlashKernelConfig &cfg) {
  TmaSharedLayout layout;
  // Every tile is a whole number of 1024-byte swizzle atoms (8 rows of 128
  // bytes), so each starts 1024-aligned.
  layout.query = 0;
  layout.keyStageBytes = cfg.keyTileBytes();
  layout.valueStageBytes = cfg.valueTileBytes();
  layout.keys = llvm::alignTo(cfg.queryTileBytes(), 1024);
  layout.values = layout.keys + kStages * layout.keyStageBytes;
  // full K, full V, empty K, empty V, kStages each; then Q's.
  layout.barriers = layout.values + kStages * layout.valueStageBytes;
  layout.queryBarrier = layout.barriers + 8 * 4 * kStages;
  layout.total = layout.queryBarrier + 8;
  return layout;
}

void TmaPipeline::declareSharedMemory(OpBuilder &b, Location loc,
                                      gpu::GPUModuleOp module) {
  if (module.lookupSymbol(kSharedMemorySymbol))
    return;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                         /*isConstant=*/false, LLVM::Linkage::External,
                         kSharedMemorySymbol, Attribute(),
                         /*alignment=*/1024,
                         static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
}

TmaPipeline::TmaPipeline(OpBuilder &b, Location loc,
                         const FlashKernelConfig &cfg, ValueRange maps)
    : KernelBuilder(b, loc), cfg(cfg), layout(TmaSharedLayout::get(cfg)),
      queryMap(maps[0]), keyMap(maps[1]), valueMap(maps[2]) {}

// Builder calls that make ops are sequenced in statements, never two in
// one argument list: the order C++ evaluates arguments in differs between
// compilers, and with it the order of the ops (and the tests that see it).

Value TmaPipeline::i32(Value index) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
}

Value TmaPipeline::i32(int64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
}

Value TmaPipeline::pointer(int64_t offset, Value stage, int64_t stride) {
  auto ptr = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
  Value base =
      LLVM::AddressOfOp::create(b, loc, ptr, kSharedMemorySymbol).getResult();
  Value bytes = idx(offset);
  if (stage)
    bytes = add(bytes, mul(stage, stride));
  return LLVM::GEPOp::create(b, loc, ptr, b.getI8Type(), base,
                             ValueRange{i32(bytes)});
}

Value TmaPipeline::stageOf(Value block) {
  return rem(block, TmaSharedLayout::kStages);
}

Value TmaPipeline::phaseOf(Value block) {
  return i32(rem(div(block, TmaSharedLayout::kStages), 2));
}

Value TmaPipeline::barrier(bool full, KeyValue which, Value block) {
  int64_t set = (full ? 0 : 2) + (which == KeyValue::Key ? 0 : 1);
  return pointer(layout.barriers + 8 * TmaSharedLayout::kStages * set,
                 stageOf(block), 8);
}

Value TmaPipeline::queryTile() { return pointer(layout.query); }
Value TmaPipeline::keyTile(Value block) {
  return pointer(layout.keys, stageOf(block), layout.keyStageBytes);
}
Value TmaPipeline::valueTile(Value block) {
  return pointer(layout.values, stageOf(block), layout.valueStageBytes);
}

void TmaPipeline::initBarriers(Value lead) {
  auto ifOp = scf::IfOp::create(b, loc, lead);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto init = [&](int64_t offset, int64_t arrivals) {
      Value bar = pointer(offset);
      NVVM::MBarrierInitOp::create(b, loc, bar, i32(arrivals),
                                   /*predicate=*/Value());
    };
    // Full barriers: the producer's arrival; empty ones: every consumer
    // warp's.
    for (int64_t s = 0; s < 4 * TmaSharedLayout::kStages; ++s)
      init(layout.barriers + 8 * s,
           s < 2 * TmaSharedLayout::kStages ? 1 : cfg.warps);
    init(layout.queryBarrier, 1);
    // The TMA unit (the async proxy) must see the initialized barriers.
    NVVM::FenceMbarrierInitOp::create(b, loc);
  }
  gpu::BarrierOp::create(b, loc);
}

void TmaPipeline::wait(Value barrier, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier, parity, i32(10000000));
}

void TmaPipeline::loadTile(Value map, Value dst, Value row, Value slab,
                           int64_t rows, int64_t width, Value bar) {
  auto cluster = LLVM::LLVMPointerType::get(
      b.getContext(),
      static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
  Value rowCoord = i32(row), slabCoord = i32(slab);
  for (int64_t atom = 0; atom < width / kSwizzleSpanElements; ++atom) {
    Value atomPtr =
        LLVM::GEPOp::create(b, loc, dst.getType(), b.getI8Type(), dst,
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(
                                atom * rows * kSwizzleSpanBytes)});
    Value dst7 = LLVM::AddrSpaceCastOp::create(b, loc, cluster, atomPtr);
    // Coordinates innermost first: column, row, slab.
    Value column = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(atom * kSwizzleSpanElements));
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, loc, dst7, map, ValueRange{column, rowCoord, slabCoord}, bar,
        /*im2colOffsets=*/ValueRange{}, /*multicastMask=*/Value(),
        /*l2CacheHint=*/Value(),
        NVVM::TMALoadModeAttr::get(b.getContext(), NVVM::TMALoadMode::TILE),
        b.getBoolAttr(false), /*group=*/nullptr, /*predicate=*/Value());
  }
}

void TmaPipeline::loadQuery(Value rowBase, Value slab) {
  Value bar = pointer(layout.queryBarrier);
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar,
                                         i32(cfg.queryTileBytes()),
                                         /*scope=*/nullptr,
                                         /*relaxed=*/nullptr, Value());
  loadTile(queryMap, queryTile(), rowBase, slab, cfg.queryBlock(), cfg.headDim,
           bar);
}

void TmaPipeline::waitQuery() {
  Value bar = pointer(layout.queryBarrier);
  wait(bar, i32(0));
}

void TmaPipeline::waitEmpty(KeyValue which, Value block) {
  // The release of block - 2 completed the phase before this block's.
  Value phase = phaseOf(block);
  Value parity = arith::XOrIOp::create(b, loc, phase, i32(1)).getResult();
  wait(barrier(/*full=*/false, which, block), parity);
}

void TmaPipeline::load(KeyValue which, Value block, Value slab) {
  bool isKey = which == KeyValue::Key;
  Value bar = barrier(/*full=*/true, which, block);
  NVVM::MBarrierArriveExpectTxOp::create(
      b, loc, Type(), bar,
      i32(isKey ? layout.keyStageBytes : layout.valueStageBytes),
      /*scope=*/nullptr, /*relaxed=*/nullptr, Value());
  Value tile = isKey ? keyTile(block) : valueTile(block);
  Value firstKey = mul(block, cfg.keyBlock);
  loadTile(isKey ? keyMap : valueMap, tile, firstKey, slab, cfg.keyBlock,
           isKey ? cfg.headDim : cfg.valueHeadDim, bar);
}

void TmaPipeline::waitFull(KeyValue which, Value block) {
  Value parity = phaseOf(block);
  wait(barrier(/*full=*/true, which, block), parity);
}

void TmaPipeline::release(KeyValue which, Value block) {
  NVVM::MBarrierArriveOp::create(b, loc, Type(),
                                 barrier(/*full=*/false, which, block),
                                 /*count=*/Value());
}
