//===- BackwardQueryWgmma.cpp - dQ of the backward on sm_90a --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The backward's dQ kernel on wgmma (BackwardKernels.h), in the frame of
// BackwardWgmmaKernel.h: a CTA per 64 query rows of one head, one consumer
// warpgroup. Q and dY stay resident (row copies); the producer streams
// the K/V head's key blocks by TMA (64 keys, 32 at D = 256), the causal blocks
// that no row of the tile sees never visited. Per block, with the queries as
// the m64 rows:
//   S = Q K^T and dP = dY V^T   SS wgmma, Q and dY the K-major A tiles, K
//                               and V the K-major B tiles;
//   dS = scale P (dP - D)       in registers, P = exp2(scale log2(e) S -
//                               log2(e) L), masked per element;
//   dQ += dS K                  register-A wgmma, dS rounded to the element
//                               type, K the N-major B tile.
// dQ stays in f32 registers over all the keys and is written once: no
// partial sum leaves the CTA, and every run adds the same numbers in the
// same order. Registers: dQ takes D / 2 per thread (128 at D = 256), S
// and dP 32 each at 64 keys (16 at 32), of the 256 that setmaxnreg gives
// one consumer warpgroup.
//
//===----------------------------------------------------------------------===//

#include "BackwardWgmmaKernel.h"
#include "FragmentSoftmax.h"
#include "TileScheduler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class QueryWgmmaKernel : public BackwardWgmmaKernel {
public:
  QueryWgmmaKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : BackwardWgmmaKernel(b, loc, cfg) {}

  void build(gpu::GPUFuncOp func);

private:
  /// The consumer warpgroup: dQ over every key block, then its store.
  void consume();
  /// One key block: dQ updated.
  void keyBlock(Value block, MutableArrayRef<Value> grad);
  /// The slab of `name` ([B, heads, rows, width]) at head `head`.
  GlobalSlab slab(StringRef name, Value head, int64_t heads, Value rows,
                  int64_t width) {
    return GlobalSlab{
        (*args)[name],
        contiguousSlab(*this, tile.batch, head, heads, rows, width),
        idx(width)};
  }

  FlashTile tile;
  std::optional<KeyBlockRange> range;
  Value numRows, numKeys, kvHead;
  /// The consumer warp's first row; per row half, log2(e) L and D.
  Value warpRow;
  SmallVector<Value, 2> lseLog2, delta;
};
} // namespace

void QueryWgmmaKernel::keyBlock(Value block, MutableArrayRef<Value> grad) {
  auto [scoreRegisters, gradRegisters] = multiplyBlock(block);
  AccumulatorTile scores(scoreRegisters), gradP(gradRegisters);
  Value firstKey = add(mul(block, cfg.keyBlock), lanes.columnPair(*this));
  SmallVector<Value, 2> keyLimits;
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half)
    keyLimits.push_back(
        range->keyLimit(*this, lanes.row(*this, warpRow, half)));
  scaleAndMaskScores(*this, scores, cfg.scale, firstKey, keyLimits);
  scoreGrads(*this, scores, gradP, lseLog2, delta, cfg.scale);
  SmallVector<Value> updated = atom->issueValues(
      grad, atom->probabilityFragments(scores, cfg.keyBlock),
      streamedColumns(0, block, idx(0), cfg.headDim), cfg.keyBlock);
  atom->wait(0);
  llvm::copy(updated, grad.begin());
  release(block);
}

void QueryWgmmaKernel::consume() {
  startConsumer();
  warpRow = add(tile.rowBase, mul(lanes.warp, 16));
  // The rows' L and D stay in registers through the key loop.
  Value rowBase = contiguousSlab(*this, tile.batch, tile.head,
                                 cfg.numQueryHeads, numRows, 1);
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
    Value row = lanes.row(*this, warpRow, half);
    Value valid = lt(row, numRows);
    Value at = add(rowBase, select(valid, row, idx(0)));
    Value lse = memref::LoadOp::create(b, loc, (*args)["lse"], ValueRange{at});
    Value rowDelta =
        memref::LoadOp::create(b, loc, (*args)["delta"], ValueRange{at});
    lseLog2.push_back(lseToLog2(*this, lse, valid));
    delta.push_back(select(valid, rowDelta, f32c(0.0)));
  }
  SmallVector<Value> init(AccumulatorTile::numRegisters(cfg.headDim),
                          f32c(0.0));
  auto loop = scf::ForOp::create(b, loc, firstBlock, numBlocks, idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> state(loop.getRegionIterArgs());
    keyBlock(loop.getInductionVar(), state);
    scf::YieldOp::create(b, loc, state);
  }
  SmallVector<Value> grad(loop.getResults());
  storeAccumulatorRows(*this, lanes, AccumulatorTile(grad), cfg.elementType,
                       (*args)["dq"],
                       contiguousSlab(*this, tile.batch, tile.head,
                                      cfg.numQueryHeads, numRows, cfg.headDim),
                       cfg.headDim, warpRow, numRows);
}

void QueryWgmmaKernel::build(gpu::GPUFuncOp func) {
  begin(func);
  numRows = (*args)["Sq"];
  numKeys = (*args)["Skv"];
  tile = scheduleTile(*this, cfg.queryBlock());
  kvHead = div(tile.head, cfg.groupSize());
  range.emplace(*this, cfg.causal, cfg.keyBlock, tile.rowBase, cfg.queryBlock(),
                numRows, numKeys);
  firstBlock = idx(0);
  numBlocks = range->numBlocks();
  // Q and dY by row copies, K and V by TMA from the K/V head's slab.
  GlobalSlab query =
      slab("q", tile.head, cfg.numQueryHeads, numRows, cfg.headDim);
  GlobalSlab grad =
      slab("do", tile.head, cfg.numQueryHeads, numRows, cfg.valueHeadDim);
  TileSources rows{{query, grad}, numRows, {}};
  TileSources keysValues;
  keysValues.keyValueSlab = add(mul(tile.batch, cfg.numKeyValueHeads), kvHead);
  runRoles(rows, tile.rowBase, keysValues, [&](Value) { consume(); });
}

void mlir::gated_attention::flash::buildBackwardQueryWgmmaKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  QueryWgmmaKernel(b, loc, cfg).build(func);
}
