//===- BackwardKeyValueKernel.cpp - dK and dV of the backward -------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The backward's dK/dV kernel (BackwardKernels.h): a CTA per 64 keys of one
// K/V head, a warp per 16 keys, dK and dV in f32 registers. The CTA's K
// rows sit in the pipeline's fixed tile (the forward's Q tile); what it
// streams through the double buffer (the forward's K and V tiles) are the
// query rows of the head's GQA group and their dY, as packed (row, head)
// pairs: packed row p is query p / R of head R * hkv + p % R, so one loop
// covers the group and each block is one copy. Per block, transposed so
// that the keys are the MMA rows:
//   S^T = K Q^T, P^T = exp2(scale log2(e) S^T - log2(e) L), dV += P^T dY,
//   dP^T = V dY^T, dS^T = scale P^T (dP^T - D), dK += dS^T Q.
// Causal: blocks before the first query that sees the CTA's first key are
// skipped; the rest are masked per element. Above D = 128 two warps share
// each 16 keys' dK and dV columns: one computes S^T, the other dP^T, and
// they trade them through shared memory.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "CpAsyncPipeline.h"
#include "MmaSyncAtom.h"
#include "SharedMemoryLayout.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class KeyValueKernel : public KernelBuilder {
public:
  KeyValueKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg) {}

  void build(gpu::GPUFuncOp func);

private:
  /// One block of packed query rows, in `buffer`: updates dK and dV.
  void queryBlock(Value block, Value buffer, AccumulatorTile gradK,
                  AccumulatorTile gradV);
  /// The block's S^T = K Q^T and dP^T = V dY^T of the warp's 16 keys.
  SmallVector<Value> scoresT(Value buffer);
  SmallVector<Value> gradPT(Value buffer);
  /// Both products, a column split's warp computing one of them.
  void tradeProducts(Value buffer, SmallVectorImpl<Value> &s,
                     SmallVectorImpl<Value> &dp);

  const FlashKernelConfig &cfg;
  LaneLayout lanes;
  std::optional<MmaSyncAtom> atom;
  std::optional<CpAsyncPipeline> pipeline;
  std::optional<WarpColumns> columns;
  std::optional<PackedQueryRows> queries;
  Value numKeys;
  /// The warp's first key, and its row in the CTA's K tile.
  Value warpKey, warpTileRow;
  /// V and its slab's offset.
  Value valueBuffer, valueBase;
  /// Column split: f32 [warps, registers, lanes] in shared memory (flat),
  /// where a tile's two warps trade S^T and dP^T.
  Value exchange;
};
} // namespace

SmallVector<Value> KeyValueKernel::scoresT(Value buffer) {
  int64_t regs = AccumulatorTile::numRegisters(cfg.keyBlock);
  SmallVector<Value> s(regs, f32c(0.0));
  AccumulatorTile scores(s);
  for (int64_t kk = 0; kk < cfg.headDim / MmaSyncAtom::kK; ++kk) {
    Fragment key = atom->loadA(pipeline->queryTile(), {}, warpTileRow, kk,
                               /*transpose=*/false);
    atom->multiplyKeys(scores, key, pipeline->keyTiles(), {buffer}, kk);
  }
  return s;
}

SmallVector<Value> KeyValueKernel::gradPT(Value buffer) {
  int64_t regs = AccumulatorTile::numRegisters(cfg.keyBlock);
  SmallVector<Value> dp(regs, f32c(0.0));
  AccumulatorTile gradP(dp);
  for (int64_t kk = 0; kk < cfg.valueHeadDim / MmaSyncAtom::kK; ++kk) {
    Fragment value =
        loadGlobalFragment(*this, lanes, cfg.elementType, valueBuffer,
                           valueBase, cfg.valueHeadDim, warpKey, numKeys, kk);
    atom->multiplyKeys(gradP, value, pipeline->valueTiles(), {buffer}, kk);
  }
  return dp;
}

void KeyValueKernel::tradeProducts(Value buffer, SmallVectorImpl<Value> &s,
                                   SmallVectorImpl<Value> &dp) {
  // Column split: the tile's two warps would each compute both products,
  // loading both operands' fragments; with the pair's dK and dV halves
  // beside them that overflowed 255 registers at D 160 to 224. Warp 0
  // computes S^T and warp 1 dP^T instead, each in full (the same sums as
  // one warp computing both), and they trade them through shared memory.
  int64_t regs = AccumulatorTile::numRegisters(cfg.keyBlock);
  Value first = eq(columns->part, idx(0));
  auto branch =
      scf::IfOp::create(b, loc, SmallVector<Type>(regs, b.getF32Type()), first,
                        /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    scf::YieldOp::create(b, loc, scoresT(buffer));
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, loc, gradPT(buffer));
  }
  // [warp, register, lane]: a warp's 32 lanes store and load consecutive
  // words. advance()'s barriers order a block's loads before the next
  // block's stores.
  Value partner = arith::XOrIOp::create(b, loc, lanes.warp, idx(1));
  auto word = [&](Value warp, int64_t r) {
    return add(mul(add(mul(warp, regs), r), 32), lanes.lane);
  };
  for (int64_t r = 0; r < regs; ++r)
    memref::StoreOp::create(b, loc, branch.getResult(r), exchange,
                            ValueRange{word(lanes.warp, r)});
  gpu::BarrierOp::create(b, loc);
  for (int64_t r = 0; r < regs; ++r) {
    Value mine = branch.getResult(r);
    Value theirs =
        memref::LoadOp::create(b, loc, exchange, ValueRange{word(partner, r)});
    s.push_back(select(first, mine, theirs));
    dp.push_back(select(first, theirs, mine));
  }
}

void KeyValueKernel::queryBlock(Value block, Value buffer,
                                AccumulatorTile gradK, AccumulatorTile gradV) {
  SmallVector<Value> s, dp;
  if (cfg.columnSplit == 1) {
    s = scoresT(buffer);
    dp = gradPT(buffer);
  } else {
    tradeProducts(buffer, s, dp);
  }
  AccumulatorTile scores(s), gradP(dp);
  Value firstColumn = add(mul(block, cfg.keyBlock), lanes.columnPair(*this));
  transposedScoreGrads(*this, lanes, cfg, *queries, firstColumn, warpKey,
                       scores, gradP, leanLoopState(cfg, /*keyValue=*/true));
  if (cfg.columnSplit == 1) {
    atom->multiplyValues(gradV, scores, pipeline->valueTiles(), {buffer});
    atom->multiplyValues(gradK, gradP, pipeline->keyTiles(), {buffer});
    return;
  }
  atom->multiplyValues(gradV, scores, pipeline->valueTiles(), {buffer},
                       columns->firstChunk(*this, cfg.valueHeadDim));
  atom->multiplyValues(gradK, gradP, pipeline->keyTiles(), {buffer},
                       columns->firstChunk(*this, cfg.headDim));
}

void KeyValueKernel::build(gpu::GPUFuncOp func) {
  budgetRegistersForLiveState(func);
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  KernelArguments args(cfg, entry);
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim;
  ChunkSwizzle swizzle = ChunkSwizzle::forRowWidths(d, dv);
  lanes = LaneLayout::build(*this);
  atom.emplace(b, loc, cfg.elementType, lanes, swizzle,
               leanLoopState(cfg, /*keyValue=*/true));
  numKeys = args["Skv"];
  valueBuffer = args["v"];
  Value keyBase =
      mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), cfg.queryBlock());
  Value kvHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  columns.emplace(*this, cfg, lanes.warp);
  warpTileRow = columns->tileRow;
  warpKey = add(keyBase, warpTileRow);
  Value kBase =
      contiguousSlab(*this, batch, kvHead, cfg.numKeyValueHeads, numKeys, d);
  valueBase =
      contiguousSlab(*this, batch, kvHead, cfg.numKeyValueHeads, numKeys, dv);
  GlobalSlab kSlab{args["k"], kBase, idx(d)};
  queries.emplace(*this, cfg, args, batch, kvHead, keyBase);
  Value numRows = queries->numRows, numBlocks = queries->numBlocks;
  Value firstBlock = queries->firstBlock;
  GlobalSlab qSlab = queries->query, doSlab = queries->grad;
  // Row bounds in 32 bits: with unpacked rows (no GQA group) the loop
  // stepped 64-bit rows and limit, and the causal 128/128 kernel spilled
  // 8 bytes on sm_90 at 8 query to 8 K/V heads.
  qSlab.narrowRows = doSlab.narrowRows = leanLoopState(cfg, /*keyValue=*/true);
  pipeline.emplace(b, loc, cfg, lanes.thread, swizzle);
  pipeline->allocateTiles();
  if (cfg.columnSplit > 1) {
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                         gpu::AddressSpace::Workgroup);
    Value smem = gpu::DynamicSharedMemoryOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                        wg));
    int64_t regs = AccumulatorTile::numRegisters(cfg.keyBlock);
    exchange = memref::ViewOp::create(
        b, loc,
        MemRefType::get({cfg.warps * regs * 32}, b.getF32Type(), AffineMap(),
                        wg),
        smem, idx(CpAsyncSharedLayout::get(cfg).exchange), ValueRange{});
  }
  (void)pipeline->loadFirst(kSlab, keyBase, numKeys, qSlab, doSlab, numRows,
                            firstBlock);

  int64_t regsK = AccumulatorTile::numRegisters(columns->columns(d));
  SmallVector<Value> init(
      regsK + AccumulatorTile::numRegisters(columns->columns(dv)), f32c(0.0));
  auto loop = scf::ForOp::create(b, loc, firstBlock, numBlocks, idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    Value buffer = arith::AndIOp::create(b, loc, j, idx(1));
    pipeline->advance(j, buffer, numBlocks, qSlab, doSlab, numRows);
    SmallVector<Value> state(loop.getRegionIterArgs());
    MutableArrayRef<Value> values(state);
    queryBlock(j, buffer, AccumulatorTile(values.take_front(regsK)),
               AccumulatorTile(values.drop_front(regsK)));
    scf::YieldOp::create(b, loc, state);
  }
  SmallVector<Value> grads(loop.getResults());
  MutableArrayRef<Value> values(grads);
  storeAccumulatorRows(*this, lanes, AccumulatorTile(values.take_front(regsK)),
                       cfg.elementType, args["dk"],
                       add(kBase, columns->firstColumn(*this, d)), d, warpKey,
                       numKeys);
  storeAccumulatorRows(*this, lanes, AccumulatorTile(values.drop_front(regsK)),
                       cfg.elementType, args["dv"],
                       add(valueBase, columns->firstColumn(*this, dv)), dv,
                       warpKey, numKeys);
  gpu::ReturnOp::create(b, loc);
}

void mlir::gated_attention::flash::buildBackwardKeyValueKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  KeyValueKernel(b, loc, cfg).build(func);
}
