//===- WgmmaFlashKernel.cpp - the sm_90a flash kernel's main loop ---------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The Hopper forward kernel, stage 1 of shared/hopper/HOPPER-NOTES.md: one
// warpgroup per CTA owns 64 query rows of one (batch, query head)
// (TileScheduler.h); Q and two stages of K/V arrive by TMA on mbarriers
// (TmaPipeline.h); S = Q K^T is an SS wgmma, O += P V an RS wgmma with P in
// registers (WgmmaAtom.h); the online softmax, the mask and the gated
// epilogue are the mma.sync kernel's (FragmentSoftmax.h, Epilogue.h), on
// the same accumulator layout. The lead thread refills the stage of block
// j - 1 with block j + 1 at the start of iteration j, after a CTA barrier
// (every thread's wgmmas of block j - 1 have completed by then).
// Not yet: a producer warpgroup with setmaxnreg, two consumer warpgroups,
// overlap of softmax with the next GEMM, pingpong (stages 2 and 3).
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/Epilogue.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashKernel.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/TileScheduler.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/TmaPipeline.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/WgmmaAtom.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class WgmmaFlashKernel : public KernelBuilder {
public:
  WgmmaFlashKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg) {}

  void build(gpu::GPUFuncOp func);

private:
  /// One key block: S = Q K^T, online softmax, O += P V, on `state`.
  void keyBlock(Value block, bool masked, SoftmaxState state);

  const FlashKernelConfig &cfg;
  LaneLayout lanes;
  std::optional<WgmmaAtom> atom;
  std::optional<TmaPipeline> pipeline;
  std::optional<KeyBlockRange> range;
  /// The warp's first query row in the sequence.
  Value warpRow;
  Value queryDescriptor;
};
} // namespace

void WgmmaFlashKernel::keyBlock(Value block, bool masked, SoftmaxState state) {
  Value acc = atom->multiplyKeys(
      queryDescriptor, atom->kMajorDescriptor(pipeline->keyTile(block)),
      cfg.headDim, cfg.keyBlock);
  SmallVector<Value> scoreRegisters = atom->unpack(acc);
  AccumulatorTile scores(scoreRegisters);

  softmaxStep(*this, lanes, *range, warpRow, block, cfg.keyBlock, cfg.scale,
              masked, scores, state);
  atom->multiplyValues(
      state.out(), scores,
      atom->nMajorDescriptor(pipeline->valueTile(block), cfg.keyBlock),
      cfg.keyBlock);
}

void WgmmaFlashKernel::build(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  Value queryMap = entry.getArgument(0), keyMap = entry.getArgument(1),
        valueMap = entry.getArgument(2), g = entry.getArgument(3),
        out = entry.getArgument(4), numRows = entry.getArgument(5),
        numKeys = entry.getArgument(6);
  int64_t dv = cfg.valueHeadDim, rows = cfg.queryBlock();

  lanes = LaneLayout::build(*this);
  atom.emplace(b, loc, cfg.elementType);
  FlashTile tile = scheduleTile(*this, rows);
  warpRow = add(tile.rowBase, mul(lanes.warp, 16));
  Value kvHead = div(tile.head, cfg.groupSize());
  Value gateHead = cfg.numGateHeads == 1 ? idx(0) : tile.head;
  // Slabs: the TMA maps are 3-D (D, S, B x H).
  Value querySlab = tile.slab(*this, tile.head, cfg.numQueryHeads);
  Value keySlab = tile.slab(*this, kvHead, cfg.numKeyValueHeads);
  EpilogueOperands epilogue{
      g, out,
      tile.slabOffset(*this, gateHead, cfg.numGateHeads, numRows,
                      cfg.gateWidth),
      tile.slabOffset(*this, tile.head, cfg.numQueryHeads, numRows, dv),
      numRows};

  Value lead = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     lanes.thread, idx(0));
  pipeline.emplace(b, loc, cfg, ValueRange{queryMap, keyMap, valueMap}, lead);
  range.emplace(*this, cfg.causal, cfg.keyBlock, tile.rowBase, rows, numRows,
                numKeys);
  Value numBlocks = range->numBlocks();

  // Prologue: Q and block 0.
  pipeline->initBarriers();
  pipeline->loadQuery(tile.rowBase, querySlab);
  auto first = scf::IfOp::create(b, loc, lt(idx(0), numBlocks));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    pipeline->loadKeyBlock(idx(0), keySlab);
  }
  pipeline->waitQuery();
  queryDescriptor = atom->kMajorDescriptor(pipeline->queryTile());

  SmallVector<Value> init = SoftmaxState::init(*this, dv);
  SmallVector<Value> state = buildKeyLoop(
      *this, *range, init,
      [&](Value j) {
        // Every thread is done with block j - 1: refill its stage with
        // block j + 1, then wait for block j.
        gpu::BarrierOp::create(b, loc);
        Value next = add(j, 1);
        auto refill = scf::IfOp::create(b, loc, lt(next, numBlocks));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(refill.thenBlock());
        pipeline->loadKeyBlock(next, keySlab);
        b.setInsertionPointAfter(refill);
        pipeline->waitKeyBlock(j);
      },
      [&](Value j, bool masked, MutableArrayRef<Value> values) {
        keyBlock(j, masked, SoftmaxState(values));
      });
  emitGatedEpilogue(*this, cfg, lanes, SoftmaxState(state), warpRow, epilogue);
  gpu::ReturnOp::create(b, loc);
}

void mlir::gated_attention::flash::buildWgmmaFlashKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  WgmmaFlashKernel(b, loc, cfg).build(func);
}
