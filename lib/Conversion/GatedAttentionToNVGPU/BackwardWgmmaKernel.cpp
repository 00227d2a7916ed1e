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

Value BackwardWgmmaKernel::i32(Value index) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
}

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

void BackwardWgmmaKernel::waitLanded(Value barrier, Value parity) {
  wait(barrier, parity);
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

void BackwardWgmmaKernel::runRoles(function_ref<void()> produce,
                                   function_ref<void(Value)> consume) {
  assert(cfg.fitsRegisterPool() && "setmaxnreg split beyond the CTA's pool");
  auto init = scf::IfOp::create(b, loc, eq(thread, idx(0)));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(init.thenBlock());
    // Full barriers and the resident tiles': two row copies of each
    // producer thread; empty ones: every consumer warp's release.
    for (int64_t s = 0; s < layout.kStages; ++s) {
      NVVM::MBarrierInitOp::create(b, loc, barrier(true, idx(s)), i32(256),
                                   /*predicate=*/Value());
      NVVM::MBarrierInitOp::create(b, loc, barrier(false, idx(s)),
                                   i32(cfg.warps), /*predicate=*/Value());
    }
    NVVM::MBarrierInitOp::create(b, loc, pointer(layout.residentBarrier),
                                 i32(256), /*predicate=*/Value());
    NVVM::FenceMbarrierInitOp::create(b, loc);
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
    produce();
    b.setInsertionPointToStart(roles.elseBlock());
    NVVM::SetMaxRegisterOp::create(
        b, loc, static_cast<uint32_t>(cfg.consumerRegisters()),
        NVVM::SetMaxRegisterAction::increase);
    consume(sub(warpgroup, 1));
  }
  gpu::ReturnOp::create(b, loc);
}

void BackwardWgmmaKernel::produceTiles(std::array<GlobalSlab, 2> resident,
                                       Value row0, Value residentLimit,
                                       std::array<GlobalSlab, 2> streamed,
                                       Value streamedLimit) {
  int64_t widths[2] = {cfg.headDim, cfg.valueHeadDim};
  Value residentBar = pointer(layout.residentBarrier);
  for (int i = 0; i < 2; ++i) {
    Value base = globalBufferPointer(*this, resident[i].buffer);
    copySwizzledRows(*this, resident[i], base, row0, residentLimit,
                     residentTile(i), cfg.queryBlock(), widths[i], thread,
                     residentBar);
  }
  Value bases[2];
  for (int i = 0; i < 2; ++i)
    bases[i] = globalBufferPointer(*this, streamed[i].buffer);
  auto loop = scf::ForOp::create(b, loc, firstBlock, numBlocks, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  Value stage = stageOf(j);
  // The release of block j - 2 completed the phase before this block's.
  Value parity = arith::XOrIOp::create(b, loc, phaseOf(j), i32(1)).getResult();
  wait(barrier(/*full=*/false, stage), parity);
  Value firstRow = mul(j, cfg.keyBlock);
  Value full = barrier(/*full=*/true, stage);
  for (int i = 0; i < 2; ++i)
    copySwizzledRows(*this, streamed[i], bases[i], firstRow, streamedLimit,
                     streamedTile(i, stage), cfg.keyBlock, widths[i], thread,
                     full);
}

void BackwardWgmmaKernel::startConsumer() {
  lanes = LaneLayout::build(*this, sub(thread, 128));
  waitLanded(pointer(layout.residentBarrier), i32(0));
}

std::array<SmallVector<Value>, 2>
BackwardWgmmaKernel::multiplyBlock(Value block) {
  int64_t widths[2] = {cfg.headDim, cfg.valueHeadDim};
  Value stage = stageOf(block);
  waitLanded(barrier(/*full=*/true, stage), phaseOf(block));
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
