//===- BackwardWgmmaKernel.cpp - the sm_90a backward kernels' frame -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "BackwardWgmmaKernel.h"
#include "TmaPipeline.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

Value BackwardWgmmaKernel::i32(Value index) { return toI32(index); }

Value BackwardWgmmaKernel::i32(int64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
}

Value BackwardWgmmaKernel::pointer(int64_t offset, Value stage,
                                   int64_t stride) {
  auto ptr = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
  Value base =
      LLVM::AddressOfOp::create(b, loc, ptr, TmaPipeline::kSharedMemorySymbol)
          .getResult();
  Value bytes = idx(offset);
  if (stage)
    bytes = add(bytes, mul(stage, stride));
  return offsetBy(base, bytes);
}

Value BackwardWgmmaKernel::offsetBy(Value tile, Value bytes) {
  Value offset = i32(bytes);
  return LLVM::GEPOp::create(b, loc, tile.getType(), b.getI8Type(), tile,
                             ValueRange{offset});
}

Value BackwardWgmmaKernel::barrier(bool full, Value stage) {
  return pointer(layout.barriers + (full ? 0 : 8 * layout.kStages), stage, 8);
}

Value BackwardWgmmaKernel::stageOf(Value block) {
  return rem(sub(block, firstBlock), layout.kStages);
}

Value BackwardWgmmaKernel::phaseOf(Value block) {
  return i32(rem(div(sub(block, firstBlock), layout.kStages), 2));
}

void BackwardWgmmaKernel::wait(Value barrier, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier, parity, i32(10000000));
}

void BackwardWgmmaKernel::waitLanded(Value barrier, Value parity, bool byTma) {
  wait(barrier, parity);
  if (byTma)
    return;
  NVVM::FenceProxyOp::create(
      b, loc,
      NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

void BackwardWgmmaKernel::begin(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  args.emplace(cfg, entry);
  thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  warpgroup = uniformWarpgroup(*this, thread);
  atom.emplace(b, loc, cfg.elementType);
}

void BackwardWgmmaKernel::runRoles(const TileSources &resident, Value row0,
                                   const TileSources &streamed,
                                   function_ref<void(Value)> consume) {
  assert(cfg.fitsRegisterPool() && "setmaxnreg split beyond the CTA's pool");
  bool residentTma = keyValueResident();
  auto init = scf::IfOp::create(b, loc, eq(thread, idx(0)));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(init.thenBlock());
    // Full barriers and the resident tiles': the TMA thread's arrival or
    // each producer thread's (arrivals()); empty ones: every consumer
    // warp's release.
    for (int64_t s = 0; s < layout.kStages; ++s) {
      NVVM::MBarrierInitOp::create(b, loc, barrier(true, idx(s)),
                                   i32(arrivals(!residentTma)),
                                   /*predicate=*/Value());
      NVVM::MBarrierInitOp::create(b, loc, barrier(false, idx(s)),
                                   i32(cfg.warps), /*predicate=*/Value());
    }
    NVVM::MBarrierInitOp::create(b, loc, pointer(layout.residentBarrier),
                                 i32(arrivals(residentTma)),
                                 /*predicate=*/Value());
    NVVM::FenceMbarrierInitOp::create(b, loc);
    // Resident TMA tiles are loaded by the thread that made their barrier,
    // before the roles split: the producer's few registers then hold only
    // its streamed loop (with the copy in it, the D = 256 dK/dV kernel
    // spilled 12 bytes of the loop bounds that both roles keep).
    if (residentTma)
      copyResident(resident, row0);
  }
  gpu::BarrierOp::create(b, loc);
  // setmaxnreg is warpgroup-wide: the branch is uniform per warpgroup.
  auto roles = scf::IfOp::create(b, loc, eq(warpgroup, idx(0)),
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(roles.thenBlock());
    NVVM::SetMaxRegisterOp::create(
        b, loc, static_cast<uint32_t>(cfg.producerRegisters()),
        NVVM::SetMaxRegisterAction::decrease);
    if (!residentTma)
      copyResident(resident, row0);
    produceStreamed(streamed);
    b.setInsertionPointToStart(roles.elseBlock());
    NVVM::SetMaxRegisterOp::create(
        b, loc, static_cast<uint32_t>(cfg.consumerRegisters()),
        NVVM::SetMaxRegisterAction::increase);
    consume(sub(warpgroup, 1));
  }
  gpu::ReturnOp::create(b, loc);
}

void BackwardWgmmaKernel::copyPair(const TileSources &src,
                                   ArrayRef<Value> bases, bool byTma,
                                   Value row0, std::array<Value, 2> tiles,
                                   int64_t rows, Value bar) {
  int64_t widths[2] = {cfg.headDim, cfg.valueHeadDim};
  if (!byTma) {
    for (int i = 0; i < 2; ++i)
      copySwizzledRows(*this, src.rows[i], bases[i], row0, src.limit, tiles[i],
                       rows, widths[i], thread, bar);
    return;
  }
  int64_t bytes = rows * (widths[0] + widths[1]) * cfg.elementBytes();
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar, i32(bytes),
                                         /*scope=*/nullptr,
                                         /*relaxed=*/nullptr, Value());
  StringRef maps[2] = {"k", "v"};
  for (int i = 0; i < 2; ++i)
    loadTmaBoxes(*this, (*args)[maps[i]], tiles[i], row0, src.keyValueSlab,
                 rows, widths[i], bar);
}

SmallVector<Value, 2> BackwardWgmmaKernel::rowBases(const TileSources &src,
                                                    bool byTma) {
  SmallVector<Value, 2> bases;
  if (!byTma)
    for (int i = 0; i < 2; ++i)
      bases.push_back(globalBufferPointer(*this, src.rows[i].buffer));
  return bases;
}

void BackwardWgmmaKernel::copyResident(const TileSources &resident,
                                       Value row0) {
  bool byTma = keyValueResident();
  // (Ops made in separate statements: one order for every compiler.)
  SmallVector<Value, 2> bases = rowBases(resident, byTma);
  Value tile0 = residentTile(0);
  Value tile1 = residentTile(1);
  Value bar = pointer(layout.residentBarrier);
  copyPair(resident, bases, byTma, row0, {tile0, tile1}, cfg.queryBlock(), bar);
}

void BackwardWgmmaKernel::produceStreamed(const TileSources &streamed) {
  bool byTma = !keyValueResident();
  OpBuilder::InsertionGuard guard(b);
  // TMA copies come from the producer's first thread alone.
  if (byTma) {
    auto lead = scf::IfOp::create(b, loc, eq(thread, idx(0)));
    b.setInsertionPointToStart(lead.thenBlock());
  }
  SmallVector<Value, 2> bases = rowBases(streamed, byTma);
  auto loop = scf::ForOp::create(b, loc, firstBlock, numBlocks, idx(1));
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  Value stage = stageOf(j);
  // The release of block j - 2 completed the phase before this block's.
  Value parity = arith::XOrIOp::create(b, loc, phaseOf(j), i32(1)).getResult();
  wait(barrier(/*full=*/false, stage), parity);
  Value firstRow = mul(j, cfg.keyBlock);
  Value tile0 = streamedTile(0, stage);
  Value tile1 = streamedTile(1, stage);
  Value full = barrier(/*full=*/true, stage);
  copyPair(streamed, bases, byTma, firstRow, {tile0, tile1}, cfg.keyBlock,
           full);
}

void BackwardWgmmaKernel::startConsumer() {
  lanes = LaneLayout::build(*this, sub(thread, 128));
  waitLanded(pointer(layout.residentBarrier), i32(0), keyValueResident());
}

std::array<SmallVector<Value>, 2>
BackwardWgmmaKernel::multiplyBlock(Value block) {
  int64_t widths[2] = {cfg.headDim, cfg.valueHeadDim};
  Value stage = stageOf(block);
  waitLanded(barrier(/*full=*/true, stage), phaseOf(block),
             !keyValueResident());
  Value acc[2];
  for (int i = 0; i < 2; ++i)
    acc[i] = atom->issueKeys(atom->kMajorDescriptor(residentTile(i)),
                             cfg.queryBlock(),
                             atom->kMajorDescriptor(streamedTile(i, stage)),
                             widths[i], cfg.keyBlock);
  atom->wait(0);
  return {atom->unpack(acc[0]), atom->unpack(acc[1])};
}

Value BackwardWgmmaKernel::streamedColumns(int i, Value block, Value consumer,
                                           int64_t width) {
  // Whole column atoms of the N-major tile, keyBlock rows of 128 bytes.
  int64_t atoms = width / cfg.columnSplit / kSwizzleSpanElements;
  Value offset = mul(consumer, atoms * cfg.keyBlock * kSwizzleSpanBytes);
  return atom->nMajorDescriptor(
      offsetBy(streamedTile(i, stageOf(block)), offset), cfg.keyBlock);
}

void BackwardWgmmaKernel::release(Value block) {
  // Every warp's wgmmas have read the stage: one arrival per warp.
  auto ifOp = scf::IfOp::create(b, loc, eq(lanes.lane, idx(0)));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  NVVM::MBarrierArriveOp::create(b, loc, Type(),
                                 barrier(/*full=*/false, stageOf(block)),
                                 /*count=*/Value());
}
