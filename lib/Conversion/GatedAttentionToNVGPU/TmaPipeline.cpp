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
  layout.barriers = layout.values + kStages * layout.valueStageBytes;
  // One full barrier per stage, then the query's; 8 bytes each.
  layout.total = layout.barriers + 8 * (kStages + 1);
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
                         const FlashKernelConfig &cfg, ValueRange maps,
                         Value lead)
    : KernelBuilder(b, loc), cfg(cfg), layout(TmaSharedLayout::get(cfg)),
      queryMap(maps[0]), keyMap(maps[1]), valueMap(maps[2]), lead(lead) {}

Value TmaPipeline::i32(Value index) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
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

Value TmaPipeline::barrier(Value stage) {
  return pointer(layout.barriers, stage, 8);
}

Value TmaPipeline::queryTile() { return pointer(layout.query); }
Value TmaPipeline::keyTile(Value block) {
  return pointer(layout.keys, stageOf(block), layout.keyStageBytes);
}
Value TmaPipeline::valueTile(Value block) {
  return pointer(layout.values, stageOf(block), layout.valueStageBytes);
}

void TmaPipeline::whenLead(function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, lead);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  body();
}

void TmaPipeline::initBarriers() {
  whenLead([&] {
    Value one = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1));
    for (int64_t s = 0; s <= TmaSharedLayout::kStages; ++s)
      NVVM::MBarrierInitOp::create(b, loc, pointer(layout.barriers + 8 * s),
                                   one, /*predicate=*/Value());
    // The TMA unit (the async proxy) must see the initialized barriers.
    NVVM::FenceMbarrierInitOp::create(b, loc);
  });
  gpu::BarrierOp::create(b, loc);
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
  int64_t rows = cfg.queryBlock();
  whenLead([&] {
    Value bar = pointer(layout.barriers + 8 * TmaSharedLayout::kStages);
    Value bytes = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(cfg.queryTileBytes()));
    NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar, bytes,
                                           /*scope=*/nullptr,
                                           /*relaxed=*/nullptr, Value());
    loadTile(queryMap, queryTile(), rowBase, slab, rows, cfg.headDim, bar);
  });
}

void TmaPipeline::waitQuery() {
  Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  Value ticks =
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(10000000));
  NVVM::MBarrierTryWaitParityOp::create(
      b, loc, pointer(layout.barriers + 8 * TmaSharedLayout::kStages), zero,
      ticks);
}

void TmaPipeline::loadKeyBlock(Value block, Value slab) {
  whenLead([&] {
    Value bar = barrier(stageOf(block));
    Value bytes = arith::ConstantOp::create(
        b, loc,
        b.getI32IntegerAttr(layout.keyStageBytes + layout.valueStageBytes));
    NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar, bytes,
                                           /*scope=*/nullptr,
                                           /*relaxed=*/nullptr, Value());
    Value key0 = mul(block, cfg.keyBlock);
    loadTile(keyMap, keyTile(block), key0, slab, cfg.keyBlock, cfg.headDim,
             bar);
    loadTile(valueMap, valueTile(block), key0, slab, cfg.keyBlock,
             cfg.valueHeadDim, bar);
  });
}

void TmaPipeline::waitKeyBlock(Value block) {
  // Block j is the (j / 2)-th use of its stage: phase (j / 2) % 2.
  Value phase = i32(rem(div(block, TmaSharedLayout::kStages), 2));
  Value ticks =
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(10000000));
  NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier(stageOf(block)), phase,
                                        ticks);
}
