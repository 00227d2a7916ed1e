//===- MmaSyncFlashKernel.cpp - the sm_80 flash kernel's main loop --------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The FlashAttention-2 forward kernel with the gate in its epilogue, put
// together from the pieces: one CTA computes `16 * warps` query rows of one
// (batch, query head) (TileScheduler.h); each warp owns 16 rows, the M of
// the mma.sync atom (MmaSyncAtom.h); K and V tiles of `key-block` rows come
// through the cp.async double buffer (CpAsyncPipeline.h); scores go through
// the online softmax (FragmentSoftmax.h) and O through the gated epilogue
// (Epilogue.h), both on the accumulator layout (FragmentLayout.h).
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/CpAsyncPipeline.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/Epilogue.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashKernel.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/MmaSyncAtom.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/TileScheduler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class MmaSyncFlashKernel : public KernelBuilder {
public:
  MmaSyncFlashKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg) {}

  void build(gpu::GPUFuncOp func);

private:
  /// One key block: S = Q K^T, online softmax, O += P V, on `state`.
  void keyBlock(Value block, Value buffer, bool masked, SoftmaxState state);

  const FlashKernelConfig &cfg;
  LaneLayout lanes;
  std::optional<MmaSyncAtom> atom;
  std::optional<CpAsyncPipeline> pipeline;
  std::optional<KeyBlockRange> range;
  /// The warp's first query row in the sequence and in the shared Q tile.
  Value warpRow, warpTileRow;
  /// Q's A fragments when they stay in registers.
  SmallVector<Fragment> queryFragments;
};
} // namespace

void MmaSyncFlashKernel::keyBlock(Value block, Value buffer, bool masked,
                                  SoftmaxState state) {
  Value zero = f32c(0.0);
  SmallVector<Value> scoreRegisters(AccumulatorTile::numRegisters(cfg.keyBlock),
                                    zero);
  AccumulatorTile scores(scoreRegisters);
  for (int64_t kk = 0; kk < cfg.headDim / MmaSyncAtom::kK; ++kk) {
    Fragment query = cfg.queryInRegisters()
                         ? queryFragments[kk]
                         : atom->loadA(pipeline->queryTile(), {}, warpTileRow,
                                       kk, /*transpose=*/false);
    atom->multiplyKeys(scores, query, pipeline->keyTiles(), {buffer}, kk);
  }

  softmaxStep(*this, lanes, *range, warpRow, block, cfg.keyBlock, cfg.scale,
              masked, scores, state);
  atom->multiplyValues(state.out(), scores, pipeline->valueTiles(), {buffer});
}

void MmaSyncFlashKernel::build(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  Value q = entry.getArgument(0), k = entry.getArgument(1),
        v = entry.getArgument(2), g = entry.getArgument(3),
        out = entry.getArgument(4), numRows = entry.getArgument(5),
        numKeys = entry.getArgument(6);
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim;
  int64_t rows = cfg.queryBlock();
  ChunkSwizzle swizzle = ChunkSwizzle::forRowWidth(std::min(d, dv));

  lanes = LaneLayout::build(*this);
  atom.emplace(b, loc, cfg.elementType, lanes, swizzle);
  FlashTile tile = scheduleTile(*this, rows);
  warpTileRow = mul(lanes.warp, 16);
  warpRow = add(tile.rowBase, warpTileRow);

  // The (batch, head) slabs of the flat operands; GQA heads share K/V.
  Value kvHead = div(tile.head, cfg.groupSize());
  Value gateHead = cfg.numGateHeads == 1 ? idx(0) : tile.head;
  auto slab = [&](Value buffer, Value h, StringRef name) {
    OperandStrides strides = operandStrides(*this, entry, cfg, name);
    return GlobalSlab{buffer, tile.slabOffset(*this, h, strides), strides.row};
  };
  GlobalSlab qSlab = slab(q, tile.head, "q");
  GlobalSlab kSlab = slab(k, kvHead, "k");
  GlobalSlab vSlab = slab(v, kvHead, "v");

  pipeline.emplace(b, loc, cfg, lanes.thread, swizzle);
  pipeline->allocateTiles();
  range.emplace(*this, cfg.causal, cfg.keyBlock, tile.rowBase, rows, numRows,
                numKeys);

  // Prologue: Q and block 0 in one group.
  Value group =
      pipeline->loadFirst(qSlab, tile.rowBase, numRows, kSlab, vSlab, numKeys);
  if (cfg.queryInRegisters()) {
    pipeline->waitAll(group);
    for (int64_t kk = 0; kk < d / MmaSyncAtom::kK; ++kk)
      queryFragments.push_back(atom->loadA(pipeline->queryTile(), {},
                                           warpTileRow, kk,
                                           /*transpose=*/false));
  }

  SmallVector<Value> init = SoftmaxState::init(*this, dv);
  Value buffer;
  SmallVector<Value> state = buildKeyLoop(
      *this, *range, init,
      [&](Value j) {
        buffer = arith::AndIOp::create(b, loc, j, idx(1));
        pipeline->advance(j, buffer, range->numBlocks(), kSlab, vSlab, numKeys);
      },
      [&](Value j, bool masked, MutableArrayRef<Value> values) {
        keyBlock(j, buffer, masked, SoftmaxState(values));
      });
  // The gate's and the output's slabs only now: at D = 256 no register is
  // left to carry them through the loop.
  GlobalSlab gSlab = slab(g, gateHead, "gate");
  GlobalSlab oSlab = slab(out, tile.head, "out");
  emitGatedEpilogue(*this, cfg, lanes, SoftmaxState(state), warpRow,
                    EpilogueOperands{gSlab.buffer, oSlab.buffer, gSlab.base,
                                     oSlab.base, numRows, gSlab.rowStride,
                                     oSlab.rowStride});
  gpu::ReturnOp::create(b, loc);
}

void mlir::gated_attention::flash::buildMmaSyncFlashKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  MmaSyncFlashKernel(b, loc, cfg).build(func);
}
