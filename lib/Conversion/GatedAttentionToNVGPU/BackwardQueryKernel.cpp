//===- BackwardQueryKernel.cpp - dQ of the backward -----------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The backward's dQ kernel (BackwardKernels.h): the forward kernel's loop
// (one CTA per 64 query rows of one head, a warp per 16 rows, K and V
// blocks through the cp.async double buffer, causal blocks skipped), with
// each key block's
//   S = Q K^T, P = exp2(scale log2(e) S - log2(e) L), dP = dY V^T,
//   dS = scale P (dP - D), dQ += dS K
// on the accumulator layout. dQ stays in f32 registers over all the keys
// and is rounded once: no partial sums leave the CTA.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "CpAsyncPipeline.h"
#include "FragmentSoftmax.h"
#include "MmaSyncAtom.h"
#include "TileScheduler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class QueryKernel : public KernelBuilder {
public:
  QueryKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg) {}

  void build(gpu::GPUFuncOp func);

private:
  /// One key block: updates the dQ registers `grad`.
  void keyBlock(Value block, Value buffer, bool masked,
                MutableArrayRef<Value> grad);

  /// Q's and dY's A fragments of head-dim chunk `kk` of the warp's rows.
  Fragment queryFragment(int64_t kk) {
    return atom->loadA(pipeline->queryTile(), {}, columns->tileRow, kk,
                       /*transpose=*/false);
  }
  Fragment gradFragment(int64_t kk) {
    return loadGlobalFragment(*this, lanes, cfg.elementType, gradBuffer,
                              gradBase, cfg.valueHeadDim, warpRow, numRows, kk);
  }

  const FlashKernelConfig &cfg;
  LaneLayout lanes;
  std::optional<MmaSyncAtom> atom;
  std::optional<CpAsyncPipeline> pipeline;
  std::optional<KeyBlockRange> range;
  std::optional<WarpColumns> columns;
  Value warpRow, numRows, gradBuffer, gradBase;
  SmallVector<Fragment> queryFragments, gradFragments;
  /// Per row half: log2(e) L and D.
  SmallVector<Value, 2> lseLog2, delta;
};
} // namespace

void QueryKernel::keyBlock(Value block, Value buffer, bool masked,
                           MutableArrayRef<Value> grad) {
  Value zero = f32c(0.0);
  int64_t regs = AccumulatorTile::numRegisters(cfg.keyBlock);
  SmallVector<Value> s(regs, zero), dp(regs, zero);
  AccumulatorTile scores(s), gradP(dp);
  // Split columns (D > 128): Q and dY fragments are read for each block,
  // no register being left to keep them.
  bool keep = cfg.columnSplit == 1;
  for (int64_t kk = 0; kk < cfg.headDim / MmaSyncAtom::kK; ++kk)
    atom->multiplyKeys(scores, keep ? queryFragments[kk] : queryFragment(kk),
                       pipeline->keyTiles(), {buffer}, kk);
  for (int64_t kk = 0; kk < cfg.valueHeadDim / MmaSyncAtom::kK; ++kk)
    atom->multiplyKeys(gradP, keep ? gradFragments[kk] : gradFragment(kk),
                       pipeline->valueTiles(), {buffer}, kk);
  Value firstKey = add(mul(block, cfg.keyBlock), lanes.columnPair(*this));
  SmallVector<Value, 2> keyLimits;
  if (masked)
    for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half)
      keyLimits.push_back(
          range->keyLimit(*this, lanes.row(*this, warpRow, half)));
  scaleAndMaskScores(*this, scores, cfg.scale, firstKey, keyLimits);
  scoreGrads(*this, scores, gradP, lseLog2, delta, cfg.scale);
  if (keep)
    atom->multiplyValues(AccumulatorTile(grad), scores, pipeline->keyTiles(),
                         {buffer});
  else
    atom->multiplyValues(AccumulatorTile(grad), scores, pipeline->keyTiles(),
                         {buffer}, columns->firstChunk(*this, cfg.headDim));
}

void QueryKernel::build(gpu::GPUFuncOp func) {
  budgetRegistersForLiveState(func);
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  KernelArguments args(cfg, entry);
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim;
  ChunkSwizzle swizzle = ChunkSwizzle::forRowWidths(d, dv);
  lanes = LaneLayout::build(*this);
  atom.emplace(b, loc, cfg.elementType, lanes, swizzle,
               leanLoopState(cfg, /*keyValue=*/false));
  numRows = args["Sq"];
  Value numKeys = args["Skv"];
  FlashTile tile = scheduleTile(*this, cfg.queryBlock());
  columns.emplace(*this, cfg, lanes.warp);
  warpRow = add(tile.rowBase, columns->tileRow);
  Value kvHead = div(tile.head, cfg.groupSize());
  Value qBase = contiguousSlab(*this, tile.batch, tile.head, cfg.numQueryHeads,
                               numRows, d);
  Value doBase = contiguousSlab(*this, tile.batch, tile.head, cfg.numQueryHeads,
                                numRows, dv);
  Value rowBase = contiguousSlab(*this, tile.batch, tile.head,
                                 cfg.numQueryHeads, numRows, 1);
  GlobalSlab qSlab{args["q"], qBase, idx(d)};
  GlobalSlab kSlab{args["k"],
                   contiguousSlab(*this, tile.batch, kvHead,
                                  cfg.numKeyValueHeads, numKeys, d),
                   idx(d)};
  GlobalSlab vSlab{args["v"],
                   contiguousSlab(*this, tile.batch, kvHead,
                                  cfg.numKeyValueHeads, numKeys, dv),
                   idx(dv)};
  // The copies compare key rows with their limit in 32 bits: the loop then
  // steps a 32-bit limit, and every dQ kernel's key loop is shorter
  // (docs/Backward.md).
  kSlab.narrowRows = vSlab.narrowRows = true;

  pipeline.emplace(b, loc, cfg, lanes.thread, swizzle);
  pipeline->allocateTiles();
  range.emplace(*this, cfg.causal, cfg.keyBlock, tile.rowBase, cfg.queryBlock(),
                numRows, numKeys);
  Value group = pipeline->loadFirst(qSlab, tile.rowBase, numRows, kSlab, vSlab,
                                    numKeys, range->firstBlock());
  // The rows' L, D and dY stay in registers through the key loop.
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
    Value row = lanes.row(*this, warpRow, half);
    Value valid = lt(row, numRows);
    Value at = add(rowBase, select(valid, row, idx(0)));
    Value lse = memref::LoadOp::create(b, loc, args["lse"], ValueRange{at});
    Value rowDelta =
        memref::LoadOp::create(b, loc, args["delta"], ValueRange{at});
    lseLog2.push_back(lseToLog2(*this, lse, valid));
    delta.push_back(select(valid, rowDelta, f32c(0.0)));
  }
  gradBuffer = args["do"];
  gradBase = doBase;
  bool keep = cfg.columnSplit == 1;
  if (keep)
    for (int64_t kk = 0; kk < dv / MmaSyncAtom::kK; ++kk)
      gradFragments.push_back(gradFragment(kk));
  pipeline->waitAll(group);
  if (keep)
    for (int64_t kk = 0; kk < d / MmaSyncAtom::kK; ++kk)
      queryFragments.push_back(queryFragment(kk));

  SmallVector<Value> init(AccumulatorTile::numRegisters(columns->columns(d)),
                          f32c(0.0));
  Value buffer;
  SmallVector<Value> grad = buildKeyLoop(
      *this, *range, init,
      [&](Value j) {
        buffer = arith::AndIOp::create(b, loc, j, idx(1));
        pipeline->advance(j, buffer, range->numBlocks(), kSlab, vSlab, numKeys);
      },
      [&](Value j, bool masked, MutableArrayRef<Value> values) {
        keyBlock(j, buffer, masked, values);
      });
  storeAccumulatorRows(*this, lanes, AccumulatorTile(grad), cfg.elementType,
                       args["dq"], add(qBase, columns->firstColumn(*this, d)),
                       d, warpRow, numRows);
  gpu::ReturnOp::create(b, loc);
}

void mlir::gated_attention::flash::buildBackwardQueryKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  QueryKernel(b, loc, cfg).build(func);
}
