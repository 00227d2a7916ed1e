//===- TmaPipeline.cpp - the sm_90a kernel's copy pipeline ----------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "TmaPipeline.h"
#include "WgmmaAtom.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

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
                         const FlashKernelConfig &cfg, TmaBoxes boxes)
    : KernelBuilder(b, loc), cfg(cfg), layout(TmaSharedLayout::get(cfg)),
      boxes(boxes) {}

TmaPipeline::TmaPipeline(OpBuilder &b, Location loc,
                         const FlashKernelConfig &cfg)
    : KernelBuilder(b, loc), cfg(cfg), layout(TmaSharedLayout::get(cfg)) {
  assert(cfg.copiesRows() && "a TMA kernel's pipeline needs its maps");
}

void TmaPipeline::setRowCopies(RowCopies sources) {
  rows = sources;
  queryBase = globalPointer(rows->query.buffer);
  keyBase = globalPointer(rows->key.buffer);
  valueBase = globalPointer(rows->value.buffer);
}

// Builder calls that make ops are sequenced in statements, never two in
// one argument list: the order C++ evaluates arguments in differs between
// compilers, and with it the order of the ops (and the tests that see it).

Value TmaPipeline::i32(Value index) { return toI32(index); }

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
Value TmaPipeline::gateBarrier(Value warp) {
  return pointer(layout.gateBarriers, warp, 8);
}
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
    // Full barriers: the producer's arrival (TMA: one, with the bytes; row
    // copies: each producer thread's, once its copies landed); empty ones:
    // every consumer warp's.
    int64_t producers = cfg.copiesRows() ? 128 : 1;
    for (int64_t s = 0; s < 4 * TmaSharedLayout::kStages; ++s)
      init(layout.barriers + 8 * s,
           s < 2 * TmaSharedLayout::kStages ? producers : cfg.warps);
    init(layout.queryBarrier, producers);
    if (cfg.persistent)
      init(layout.queryEmptyBarrier, cfg.warps);
    // A gate barrier: its warp's lane 0 arrives, with the bytes.
    if (cfg.stagesGate())
      for (int64_t w = 0; w < cfg.warps; ++w)
        init(layout.gateBarriers + 8 * w, 1);
    // The TMA unit (the async proxy) must see the initialized barriers.
    NVVM::FenceMbarrierInitOp::create(b, loc);
  }
  gpu::BarrierOp::create(b, loc);
}

void TmaPipeline::wait(Value barrier, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier, parity, i32(10000000));
}

void mlir::gated_attention::flash::loadTmaBoxes(const KernelBuilder &kb,
                                                Value map, Value dst, Value row,
                                                Value slab, int64_t rows,
                                                int64_t width, Value bar) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto cluster = LLVM::LLVMPointerType::get(
      b.getContext(),
      static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
  Value rowCoord = kb.toI32(row);
  Value slabCoord = kb.toI32(slab);
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

void TmaPipeline::loadTile(Value map, Value dst, Value row, Value slab,
                           int64_t rows, int64_t width, Value bar) {
  loadTmaBoxes(*this, map, dst, row, slab, rows, width, bar);
}

Value mlir::gated_attention::flash::globalBufferPointer(const KernelBuilder &kb,
                                                        Value buffer) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value address =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  Value bits = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  Value generic = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), bits);
  auto global = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Global));
  return LLVM::AddrSpaceCastOp::create(b, loc, global, generic);
}

Value TmaPipeline::globalPointer(Value buffer) {
  return globalBufferPointer(*this, buffer);
}

void mlir::gated_attention::flash::copySwizzledRows(
    const KernelBuilder &kb, const GlobalSlab &src, Value base, Value row0,
    Value limit, Value dst, int64_t numRows, int64_t width, Value thread,
    Value bar) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  constexpr int64_t chunkElements = 8, elementBytes = 2;
  int64_t chunksPerRow = width / chunkElements;
  Value threadRow = kb.div(thread, chunksPerRow);
  Value chunk = kb.rem(thread, chunksPerRow);
  // A loop over the thread's rows, kept rolled: the producer has few
  // registers, and a row's lookup, address and copy need only a handful.
  // (From the thread's first row: a bound LLVM cannot count, so it does
  // not unroll the loop.) Rows of 24 chunks (D = 192) leave 8 threads
  // without a whole row: they start past the tile and copy nothing, and
  // the others' trip counts may differ by one.
  int64_t rowsPerPass = 128 / chunksPerRow;
  Value first = threadRow;
  if (128 % chunksPerRow)
    first = kb.select(kb.lt(threadRow, kb.idx(rowsPerPass)), threadRow,
                      kb.idx(numRows));
  auto loop =
      scf::ForOp::create(b, loc, first, kb.idx(numRows), kb.idx(rowsPerPass));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value r = loop.getInductionVar();
    auto [valid, element] = slabElement(
        kb, src, kb.add(row0, r), limit,
        [&](Value row, Value valid) {
          return src.pages ? pagedSourceRow(kb, src, row, valid)
                           : kb.select(valid, row, kb.idx(0));
        },
        [&] { return kb.mul(chunk, chunkElements); });
    Value bytes = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                             kb.mul(element, elementBytes));
    Value from = LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(),
                                     base, ValueRange{bytes});
    Value offset = kb.toI32(swizzledChunkOffset(kb, r, chunk, numRows));
    Value to = LLVM::GEPOp::create(b, loc, dst.getType(), b.getI8Type(), dst,
                                   ValueRange{offset});
    // Rows past the sequence: 0 bytes read, 16 zeroed.
    Value sixteen = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(16));
    Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
    NVVM::CpAsyncOp::create(b, loc, to, from, /*size=*/16,
                            NVVM::LoadCacheModifierKind::CG,
                            kb.select(valid, sixteen, zero));
  }
  NVVM::CpAsyncMBarrierArriveOp::create(b, loc, bar, /*noinc=*/true);
}

void TmaPipeline::copyRows(const GlobalSlab &src, Value base, Value row0,
                           Value limit, Value dst, int64_t numRows,
                           int64_t width, Value bar) {
  copySwizzledRows(*this, src, base, row0, limit, dst, numRows, width,
                   rows->thread, bar);
}

void TmaPipeline::loadQuery(Value rowBase) {
  Value bar = pointer(layout.queryBarrier);
  if (cfg.copiesRows()) {
    copyRows(rows->query, queryBase, rowBase, rows->numQueries, queryTile(),
             cfg.queryBlock(), cfg.headDim, bar);
    return;
  }
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar,
                                         i32(cfg.queryTileBytes()),
                                         /*scope=*/nullptr,
                                         /*relaxed=*/nullptr, Value());
  loadTile(boxes->queryMap, queryTile(), rowBase, boxes->querySlab,
           cfg.queryBlock(), cfg.headDim, bar);
}

void TmaPipeline::waitLanded(Value barrier, Value parity) {
  wait(barrier, parity);
  // cp.async writes through the generic proxy, wgmma reads through the
  // async one.
  if (cfg.copiesRows())
    NVVM::FenceProxyOp::create(
        b, loc,
        NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
}

void TmaPipeline::waitQuery(Value parity) {
  Value bar = pointer(layout.queryBarrier);
  waitLanded(bar, parity);
}

void TmaPipeline::waitQueryEmpty(Value parity) {
  // The previous tile's release completed the phase before this tile's
  // (the first tile's: a fresh barrier's).
  Value previous = arith::XOrIOp::create(b, loc, parity, i32(1)).getResult();
  wait(pointer(layout.queryEmptyBarrier), previous);
}

void TmaPipeline::releaseQuery() {
  NVVM::MBarrierArriveOp::create(b, loc, Type(),
                                 pointer(layout.queryEmptyBarrier),
                                 /*count=*/Value());
}

void TmaPipeline::endQueries(Value parity) {
  waitQueryEmpty(parity);
  NVVM::MBarrierArriveOp::create(b, loc, Type(), pointer(layout.queryBarrier),
                                 /*count=*/Value());
}

void TmaPipeline::waitEmpty(KeyValue which, Value block) {
  // The release of block - 2 completed the phase before this block's.
  Value phase = phaseOf(block);
  Value parity = arith::XOrIOp::create(b, loc, phase, i32(1)).getResult();
  wait(barrier(/*full=*/false, which, block), parity);
}

void TmaPipeline::load(KeyValue which, Value block, Value tileBlock) {
  bool isKey = which == KeyValue::Key;
  Value bar = barrier(/*full=*/true, which, block);
  int64_t width = isKey ? cfg.headDim : cfg.valueHeadDim;
  if (cfg.copiesRows()) {
    Value tile = isKey ? keyTile(block) : valueTile(block);
    Value firstKey = mul(tileBlock, cfg.keyBlock);
    copyRows(isKey ? rows->key : rows->value, isKey ? keyBase : valueBase,
             firstKey, rows->numKeys, tile, cfg.keyBlock, width, bar);
    return;
  }
  NVVM::MBarrierArriveExpectTxOp::create(
      b, loc, Type(), bar,
      i32(isKey ? layout.keyStageBytes : layout.valueStageBytes),
      /*scope=*/nullptr, /*relaxed=*/nullptr, Value());
  Value tile = isKey ? keyTile(block) : valueTile(block);
  Value firstKey = mul(tileBlock, cfg.keyBlock);
  loadTile(isKey ? boxes->keyMap : boxes->valueMap, tile, firstKey,
           boxes->keySlab, cfg.keyBlock, width, bar);
}

void TmaPipeline::waitFull(KeyValue which, Value block) {
  Value parity = phaseOf(block);
  waitLanded(barrier(/*full=*/true, which, block), parity);
}

void TmaPipeline::release(KeyValue which, Value block) {
  NVVM::MBarrierArriveOp::create(b, loc, Type(),
                                 barrier(/*full=*/false, which, block),
                                 /*count=*/Value());
}
