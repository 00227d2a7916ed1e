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
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "MmaSyncAtom.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

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
  Value numRows, numKeys, causalOffset;
  /// The warp's first key, and its row in the CTA's K tile.
  Value warpKey, warpTileRow;
  /// The first query head of the group, the slab offsets of V and of the
  /// group's L and D.
  Value firstHead, batch, valueBuffer, valueBase, lse, delta;
};
} // namespace

void KeyValueKernel::queryBlock(Value block, Value buffer,
                                AccumulatorTile gradK, AccumulatorTile gradV) {
  int64_t group = cfg.groupSize();
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
  // Each column is a packed query row: its L and D, and (causal) whether
  // the lane's keys are visible from it.
  Value scaleLog2 = f32c(cfg.scale * M_LOG2E);
  Value firstColumn = add(mul(block, cfg.keyBlock), lanes.columnPair(*this));
  for (int64_t t = 0; t < scores.numTiles(); ++t)
    for (int64_t c = 0; c < AccumulatorTile::kColumnsPerLane; ++c) {
      Value packed = add(firstColumn, t * 8 + c);
      Value query = group > 1 ? div(packed, group) : packed;
      Value head = group > 1 ? add(firstHead, rem(packed, group)) : firstHead;
      Value valid = lt(query, numRows);
      Value at =
          add(contiguousSlab(*this, batch, head, cfg.numQueryHeads, numRows, 1),
              select(valid, query, idx(0)));
      Value lseLog2 = lseToLog2(
          *this, memref::LoadOp::create(b, loc, lse, ValueRange{at}), valid);
      Value rowDelta = select(
          valid, memref::LoadOp::create(b, loc, delta, ValueRange{at}), zero);
      Value keyBound;
      if (cfg.causal)
        keyBound = buildCausalKeyBound(b, loc, query, causalOffset);
      for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
        Value &x = scores.at(t, half, c);
        Value p =
            math::Exp2Op::create(b, loc, fsub(fmul(x, scaleLog2), lseLog2));
        if (keyBound)
          p = select(lt(lanes.row(*this, warpKey, half), keyBound), p, zero);
        x = p;
        gradP.at(t, half, c) = buildScoreGrad(b, loc, p, gradP.at(t, half, c),
                                              rowDelta, cfg.scale);
      }
    }
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
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim, group = cfg.groupSize();
  ChunkSwizzle swizzle = ChunkSwizzle::forRowWidth(std::min(d, dv));
  lanes = LaneLayout::build(*this);
  atom.emplace(b, loc, cfg.elementType, lanes, swizzle);
  numRows = args["Sq"];
  numKeys = args["Skv"];
  lse = args["lse"];
  delta = args["delta"];
  valueBuffer = args["v"];
  Value keyBase =
      mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), cfg.queryBlock());
  Value kvHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  firstHead = mul(kvHead, group);
  columns.emplace(*this, cfg, lanes.warp);
  warpTileRow = columns->tileRow;
  warpKey = add(keyBase, warpTileRow);
  Value kBase =
      contiguousSlab(*this, batch, kvHead, cfg.numKeyValueHeads, numKeys, d);
  valueBase =
      contiguousSlab(*this, batch, kvHead, cfg.numKeyValueHeads, numKeys, dv);
  GlobalSlab kSlab{args["k"], kBase, idx(d)};
  // The group's heads are consecutive: packed row p is row p / R of the
  // first head's slab, p % R head strides further.
  auto packed = [&](StringRef name, int64_t width) {
    GlobalSlab slab{args[name],
                    contiguousSlab(*this, batch, firstHead, cfg.numQueryHeads,
                                   numRows, width),
                    idx(width)};
    if (group > 1) {
      slab.rowGroup = group;
      slab.groupStride = mul(numRows, width);
    }
    return slab;
  };
  GlobalSlab qSlab = packed("q", d), doSlab = packed("do", dv);

  // Causal: query i sees key j iff j <= i + Skv - Sq; the CTA's first key
  // is first seen by query keyBase - (Skv - Sq).
  Value numBlocks = arith::CeilDivUIOp::create(b, loc, mul(numRows, group),
                                               idx(cfg.keyBlock));
  Value firstBlock = idx(0);
  if (cfg.causal) {
    causalOffset = buildCausalOffset(b, loc, numKeys, numRows);
    Value firstQuery =
        arith::MaxSIOp::create(b, loc, sub(keyBase, causalOffset), idx(0));
    firstBlock = div(mul(firstQuery, group), cfg.keyBlock);
  }
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
