//===- BackwardKeyValueWgmma.cpp - dK and dV of the backward on sm_90a ----===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The backward's dK/dV kernel on wgmma (BackwardKernels.h), in the frame
// of BackwardWgmmaKernel.h: a CTA per 64 keys of one K/V head. Warpgroup
// 0, the producer, copies the CTA's K and V tiles once and then streams
// the packed query rows of the head's GQA group (PackedQueryRows) and
// their dY, 64 packed rows a block (32 above D = 64), through the
// two-stage ring. The consumers compute, with the keys as the m64 rows:
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
// K and V land by TMA, once; the query rows are copied by the producer
// warpgroup's cp.async (16-byte chunks into the 128B-swizzled layout a TMA
// box writes; copySwizzledRows): packed GQA rows interleave the group's
// heads, which no TMA box follows. Causal: blocks before the first query that
// sees the CTA's first key are skipped (PackedQueryRows), the rest masked per
// element.
//
//===----------------------------------------------------------------------===//

#include "BackwardWgmmaKernel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class KeyValueWgmmaKernel : public BackwardWgmmaKernel {
public:
  KeyValueWgmmaKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : BackwardWgmmaKernel(b, loc, cfg) {}

  void build(gpu::GPUFuncOp func);

private:
  /// Consumer warpgroup `consumer`: its columns of dK and dV over every
  /// block, then their store.
  void consume(Value consumer);
  /// One block of packed query rows: dK and dV updated.
  void queryBlock(Value block, Value consumer, MutableArrayRef<Value> gradK,
                  MutableArrayRef<Value> gradV);
  std::optional<PackedQueryRows> rows;
  Value numKeys, keyBase, kvHead, batch;
  /// The consumer warp's first key.
  Value warpKey;
};
} // namespace

void KeyValueWgmmaKernel::queryBlock(Value block, Value consumer,
                                     MutableArrayRef<Value> gradK,
                                     MutableArrayRef<Value> gradV) {
  auto [scoreRegisters, gradRegisters] = multiplyBlock(block);
  AccumulatorTile scores(scoreRegisters), gradP(gradRegisters);
  Value firstColumn = add(mul(block, cfg.keyBlock), lanes.columnPair(*this));
  transposedScoreGrads(*this, lanes, cfg, *rows, firstColumn, warpKey, scores,
                       gradP);
  SmallVector<Value> newV = atom->issueValues(
      gradV, atom->probabilityFragments(scores, cfg.keyBlock),
      streamedColumns(1, block, consumer, cfg.valueHeadDim), cfg.keyBlock);
  SmallVector<Value> newK = atom->issueValues(
      gradK, atom->probabilityFragments(gradP, cfg.keyBlock),
      streamedColumns(0, block, consumer, cfg.headDim), cfg.keyBlock);
  atom->wait(0);
  llvm::copy(newV, gradV.begin());
  llvm::copy(newK, gradK.begin());
  release(block);
}

void KeyValueWgmmaKernel::consume(Value consumer) {
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim;
  startConsumer();
  // The warp's 16 rows of its warpgroup's m64 tile.
  warpKey = add(keyBase, mul(rem(lanes.warp, 4), 16));
  int64_t regsK = AccumulatorTile::numRegisters(d / cfg.columnSplit);
  SmallVector<Value> init(
      regsK + AccumulatorTile::numRegisters(dv / cfg.columnSplit), f32c(0.0));
  auto loop = scf::ForOp::create(b, loc, firstBlock, numBlocks, idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    SmallVector<Value> state(loop.getRegionIterArgs());
    MutableArrayRef<Value> values(state);
    queryBlock(j, consumer, values.take_front(regsK), values.drop_front(regsK));
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
  begin(func);
  numKeys = (*args)["Skv"];
  keyBase =
      mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), cfg.queryBlock());
  kvHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  rows.emplace(*this, cfg, *args, batch, kvHead, keyBase);
  firstBlock = rows->firstBlock;
  numBlocks = rows->numBlocks;
  // K and V by TMA from the CTA's head's slab; the packed rows by row
  // copies.
  TileSources keysValues;
  keysValues.keyValueSlab = add(mul(batch, cfg.numKeyValueHeads), kvHead);
  TileSources queries{{rows->query, rows->grad}, rows->numRows, {}};
  runRoles(keysValues, keyBase, queries,
           [&](Value consumer) { consume(consumer); });
}

void mlir::gated_attention::flash::buildBackwardKeyValueWgmmaKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  KeyValueWgmmaKernel(b, loc, cfg).build(func);
}
