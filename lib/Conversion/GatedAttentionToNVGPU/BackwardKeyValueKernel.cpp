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
// skipped; the rest are masked per element.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "CpAsyncPipeline.h"
#include "MmaSyncAtom.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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
};
} // namespace

void KeyValueKernel::queryBlock(Value block, Value buffer,
                                AccumulatorTile gradK, AccumulatorTile gradV) {
  Value zero = f32c(0.0);
  int64_t regs = AccumulatorTile::numRegisters(cfg.keyBlock);
  SmallVector<Value> s(regs, zero), dp(regs, zero);
  AccumulatorTile scores(s), gradP(dp);
  for (int64_t kk = 0; kk < cfg.headDim / MmaSyncAtom::kK; ++kk) {
    Fragment key = atom->loadA(pipeline->queryTile(), {}, warpTileRow, kk,
                               /*transpose=*/false);
    atom->multiplyKeys(scores, key, pipeline->keyTiles(), {buffer}, kk);
  }
  for (int64_t kk = 0; kk < cfg.valueHeadDim / MmaSyncAtom::kK; ++kk) {
    Fragment value =
        loadGlobalFragment(*this, lanes, cfg.elementType, valueBuffer,
                           valueBase, cfg.valueHeadDim, warpKey, numKeys, kk);
    atom->multiplyKeys(gradP, value, pipeline->valueTiles(), {buffer}, kk);
  }
  Value firstColumn = add(mul(block, cfg.keyBlock), lanes.columnPair(*this));
  transposedScoreGrads(*this, lanes, cfg, *queries, firstColumn, warpKey,
                       scores, gradP);
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
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  KernelArguments args(cfg, entry);
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim;
  ChunkSwizzle swizzle = ChunkSwizzle::forRowWidths(d, dv);
  lanes = LaneLayout::build(*this);
  atom.emplace(b, loc, cfg.elementType, lanes, swizzle);
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
  pipeline.emplace(b, loc, cfg, lanes.thread, swizzle);
  pipeline->allocateTiles();
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
