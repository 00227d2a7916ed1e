//===- BackwardKeyValueWgmma.cpp - dK and dV of the backward on sm_90a ----===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The backward's dK/dV kernel on wgmma (BackwardKernels.h), warp
// specialized as the forward's WgmmaFlashKernel.cpp: a CTA per 64 keys of
// one K/V head. Warpgroup 0, the producer, copies the CTA's K and V tiles
// once and then streams the packed query rows of the head's GQA group
// (PackedQueryRows) and their dY, 64 packed rows a block, through a
// two-stage ring of shared tiles with `full` and `empty` mbarriers (phases
// as in TmaPipeline.h). The consumers compute, with the keys as the m64
// rows:
//   S^T = K Q^T and dP^T = V dY^T    SS wgmma, K and V the K-major A
//                                    tiles, Q and dY the K-major B tiles;
//   P^T, dS^T                        in registers (transposedScoreGrads);
//   dV += P^T dY, dK += dS^T Q       RS wgmma, P^T and dS^T rounded to the
//                                    element type as the register A
//                                    operand, dY and Q the N-major B tiles
//                                    (their [rows, D] row-major tiles read
//                                    along the rows: the transpose of the
//                                    K-major view, as V is in the
//                                    forward's P V).
// dK and dV stay in f32 registers over all the blocks and are rounded
// once. Registers per consumer thread: dK and dV take (D + Dv) / 2, S^T
// and dP^T 32 each; at D = Dv = 128 that is 192 of the 256 that setmaxnreg
// gives one consumer warpgroup. At D = 256 the accumulators alone would be
// 256: two consumer warpgroups share the 64 keys, each accumulating half
// of the columns of dK and dV (240 registers each: 128 + 64 + their
// addressing) and each computing the block's whole S^T and dP^T, as the
// mma.sync kernel's column split does. Tiling the value dim instead would
// recompute S^T and dP^T per tile all the same and stream Q and dY twice.
// The rows are copied by the producer warpgroup's cp.async (16-byte
// chunks into the 128B-swizzled layout a TMA box writes; copySwizzledRows)
// rather than by TMA: packed GQA rows interleave the group's heads, which
// no TMA box follows. Causal: blocks before the first query that sees the
// CTA's first key are skipped (PackedQueryRows), the rest masked per
// element.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "SharedMemoryLayout.h"
#include "TmaPipeline.h"
#include "WgmmaAtom.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class KeyValueWgmmaKernel : public KernelBuilder {
public:
  KeyValueWgmmaKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg), layout(BackwardTmaLayout::get(cfg)) {}

  void build(gpu::GPUFuncOp func);

private:
  /// Warpgroup 0: the K and V tiles, then every block of query rows into
  /// its stage once the consumers have released it.
  void produce(Value thread);
  /// Consumer warpgroup `consumer`: its columns of dK and dV over every
  /// block, then their store.
  void consume(Value thread, Value consumer);
  /// One block of packed query rows in stage `stage`: dK and dV updated.
  void queryBlock(Value block, Value stage, Value consumer,
                  MutableArrayRef<Value> gradK, MutableArrayRef<Value> gradV);

  /// !llvm.ptr<3> at byte `offset` (+ stage x stride) of shared memory.
  Value pointer(int64_t offset, Value stage = {}, int64_t stride = 0);
  /// `tile` advanced by `bytes` (uniform, run-time).
  Value offsetBy(Value tile, Value bytes);
  Value queryTile(Value stage) {
    return pointer(layout.queries, stage, layout.queryStageBytes);
  }
  Value gradTile(Value stage) {
    return pointer(layout.grads, stage, layout.gradStageBytes);
  }
  /// The `full` or `empty` barrier of `stage`.
  Value barrier(bool full, Value stage) {
    return pointer(layout.barriers + (full ? 0 : 8 * layout.kStages), stage, 8);
  }
  /// Block `block`'s stage, and the parity of its use of the stage.
  Value stageOf(Value block) {
    return rem(sub(block, rows->firstBlock), layout.kStages);
  }
  Value phaseOf(Value block) {
    return i32(rem(div(sub(block, rows->firstBlock), layout.kStages), 2));
  }
  void wait(Value barrier, Value parity);
  /// Waits on a barrier that row copies arrive on, then orders their
  /// (generic proxy) writes before wgmma's (async proxy) reads.
  void waitLanded(Value barrier, Value parity);
  void when(Value cond, function_ref<void()> body);
  Value i32(Value index);
  Value i32(int64_t value);

  const FlashKernelConfig &cfg;
  BackwardTmaLayout layout;
  std::optional<KernelArguments> args;
  std::optional<PackedQueryRows> rows;
  std::optional<WgmmaAtom> atom;
  LaneLayout lanes;
  Value numKeys, keyBase, kvHead, batch;
  /// The consumer warp's first key.
  Value warpKey;
};
} // namespace

Value KeyValueWgmmaKernel::i32(Value index) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
}

Value KeyValueWgmmaKernel::i32(int64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
}

Value KeyValueWgmmaKernel::pointer(int64_t offset, Value stage,
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

Value KeyValueWgmmaKernel::offsetBy(Value tile, Value bytes) {
  Value offset = i32(bytes);
  return LLVM::GEPOp::create(b, loc, tile.getType(), b.getI8Type(), tile,
                             ValueRange{offset});
}

void KeyValueWgmmaKernel::wait(Value barrier, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier, parity, i32(10000000));
}

void KeyValueWgmmaKernel::waitLanded(Value barrier, Value parity) {
  wait(barrier, parity);
  NVVM::FenceProxyOp::create(
      b, loc,
      NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

void KeyValueWgmmaKernel::when(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, cond);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  body();
}

void KeyValueWgmmaKernel::produce(Value thread) {
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim, tileRows = cfg.queryBlock();
  // K and V: one arrival of each producer thread per tile.
  Value keyValueBar = pointer(layout.keyValueBarrier);
  for (auto [name, width, offset] :
       {std::tuple{StringRef("k"), d, layout.keys},
        std::tuple{StringRef("v"), dv, layout.values}}) {
    GlobalSlab slab{(*args)[name],
                    contiguousSlab(*this, batch, kvHead, cfg.numKeyValueHeads,
                                   numKeys, width),
                    idx(width)};
    Value base = globalBufferPointer(*this, slab.buffer);
    copySwizzledRows(*this, slab, base, keyBase, numKeys, pointer(offset),
                     tileRows, width, thread, keyValueBar);
  }
  Value queryBase = globalBufferPointer(*this, rows->query.buffer);
  Value gradBase = globalBufferPointer(*this, rows->grad.buffer);
  auto loop =
      scf::ForOp::create(b, loc, rows->firstBlock, rows->numBlocks, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  Value stage = stageOf(j);
  // The release of block j - 2 completed the phase before this block's.
  Value parity = arith::XOrIOp::create(b, loc, phaseOf(j), i32(1)).getResult();
  wait(barrier(/*full=*/false, stage), parity);
  Value firstRow = mul(j, cfg.keyBlock);
  Value full = barrier(/*full=*/true, stage);
  copySwizzledRows(*this, rows->query, queryBase, firstRow, rows->numRows,
                   queryTile(stage), cfg.keyBlock, d, thread, full);
  copySwizzledRows(*this, rows->grad, gradBase, firstRow, rows->numRows,
                   gradTile(stage), cfg.keyBlock, dv, thread, full);
}

void KeyValueWgmmaKernel::queryBlock(Value block, Value stage, Value consumer,
                                     MutableArrayRef<Value> gradK,
                                     MutableArrayRef<Value> gradV) {
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim, tileRows = cfg.queryBlock();
  int64_t streamed = cfg.keyBlock;
  Value queries = queryTile(stage), grads = gradTile(stage);
  waitLanded(barrier(/*full=*/true, stage), phaseOf(block));
  Value scoreAcc =
      atom->issueKeys(atom->kMajorDescriptor(pointer(layout.keys)), tileRows,
                      atom->kMajorDescriptor(queries), d, streamed);
  Value gradAcc =
      atom->issueKeys(atom->kMajorDescriptor(pointer(layout.values)), tileRows,
                      atom->kMajorDescriptor(grads), dv, streamed);
  atom->wait(0);
  SmallVector<Value> scoreRegisters = atom->unpack(scoreAcc);
  SmallVector<Value> gradRegisters = atom->unpack(gradAcc);
  AccumulatorTile scores(scoreRegisters), gradP(gradRegisters);
  Value firstColumn = add(mul(block, streamed), lanes.columnPair(*this));
  transposedScoreGrads(*this, lanes, cfg, *rows, firstColumn, warpKey, scores,
                       gradP);
  // The consumer's columns of dY and Q: whole column atoms of the N-major
  // tiles, `streamed` rows of 128 bytes each.
  auto columns = [&](Value tile, int64_t width) {
    int64_t atoms = width / cfg.columnSplit / kSwizzleSpanElements;
    Value offset = mul(consumer, atoms * streamed * kSwizzleSpanBytes);
    return atom->nMajorDescriptor(offsetBy(tile, offset), streamed);
  };
  SmallVector<Value> newV =
      atom->issueValues(gradV, atom->probabilityFragments(scores, streamed),
                        columns(grads, dv), streamed);
  SmallVector<Value> newK =
      atom->issueValues(gradK, atom->probabilityFragments(gradP, streamed),
                        columns(queries, d), streamed);
  atom->wait(0);
  llvm::copy(newV, gradV.begin());
  llvm::copy(newK, gradK.begin());
  // Every warp's wgmmas have read the stage: one arrival per warp.
  when(eq(lanes.lane, idx(0)), [&] {
    NVVM::MBarrierArriveOp::create(b, loc, Type(),
                                   barrier(/*full=*/false, stage),
                                   /*count=*/Value());
  });
}

void KeyValueWgmmaKernel::consume(Value thread, Value consumer) {
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim;
  // Threads and warps counted from the first consumer's; the warp's 16
  // rows of its warpgroup's m64 tile.
  lanes = LaneLayout::build(*this, sub(thread, 128));
  warpKey = add(keyBase, mul(rem(lanes.warp, 4), 16));
  waitLanded(pointer(layout.keyValueBarrier), i32(0));
  int64_t regsK = AccumulatorTile::numRegisters(d / cfg.columnSplit);
  SmallVector<Value> init(
      regsK + AccumulatorTile::numRegisters(dv / cfg.columnSplit), f32c(0.0));
  auto loop = scf::ForOp::create(b, loc, rows->firstBlock, rows->numBlocks,
                                 idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    SmallVector<Value> state(loop.getRegionIterArgs());
    MutableArrayRef<Value> values(state);
    queryBlock(j, stageOf(j), consumer, values.take_front(regsK),
               values.drop_front(regsK));
    scf::YieldOp::create(b, loc, state);
  }
  SmallVector<Value> grads(loop.getResults());
  MutableArrayRef<Value> values(grads);
  for (auto [name, width, acc] :
       {std::tuple{StringRef("dk"), d, values.take_front(regsK)},
        std::tuple{StringRef("dv"), dv, values.drop_front(regsK)}}) {
    Value slab = contiguousSlab(*this, batch, kvHead, cfg.numKeyValueHeads,
                                numKeys, width);
    Value firstColumn = mul(consumer, width / cfg.columnSplit);
    storeAccumulatorRows(*this, lanes, AccumulatorTile(acc), cfg.elementType,
                         (*args)[name], add(slab, firstColumn), width, warpKey,
                         numKeys);
  }
}

void KeyValueWgmmaKernel::build(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  args.emplace(cfg, entry);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value warpgroup = uniformWarpgroup(*this, thread);
  atom.emplace(b, loc, cfg.elementType);
  numKeys = (*args)["Skv"];
  keyBase =
      mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), cfg.queryBlock());
  kvHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  rows.emplace(*this, cfg, *args, batch, kvHead, keyBase);

  auto init = scf::IfOp::create(b, loc, eq(thread, idx(0)));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(init.thenBlock());
    // Full barriers and K/V's: two row copies of each producer thread (Q
    // and dY, or K and V); empty ones: every consumer warp's release.
    for (int64_t s = 0; s < layout.kStages; ++s) {
      NVVM::MBarrierInitOp::create(b, loc, barrier(true, idx(s)), i32(256),
                                   /*predicate=*/Value());
      NVVM::MBarrierInitOp::create(b, loc, barrier(false, idx(s)),
                                   i32(cfg.warps), /*predicate=*/Value());
    }
    NVVM::MBarrierInitOp::create(b, loc, pointer(layout.keyValueBarrier),
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
    produce(thread);
    b.setInsertionPointToStart(roles.elseBlock());
    NVVM::SetMaxRegisterOp::create(
        b, loc, static_cast<uint32_t>(cfg.consumerRegisters()),
        NVVM::SetMaxRegisterAction::increase);
    consume(thread, sub(warpgroup, 1));
  }
  gpu::ReturnOp::create(b, loc);
}

void mlir::gated_attention::flash::buildBackwardKeyValueWgmmaKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  KeyValueWgmmaKernel(b, loc, cfg).build(func);
}
