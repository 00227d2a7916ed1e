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
// (Epilogue.h), both on the accumulator layout (FragmentLayout.h). The
// paged kernel is the same loop over one sequence of packed queries, its
// K/V rows found through the block table (CpAsyncPipeline.h: PageTable).
//
//===----------------------------------------------------------------------===//

#include "CpAsyncPipeline.h"
#include "Epilogue.h"
#include "FlashKernel.h"
#include "MmaSyncAtom.h"
#include "PagedTile.h"
#include "TileScheduler.h"

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
  /// The dense kernel: a (batch, head) slab of [B, H, S, D] buffers.
  void buildDense(Block &entry);
  /// The paged kernel: packed queries of one sequence, K/V through its
  /// block table (TileScheduler.h: scheduleVarlenTile).
  void buildPaged(Block &entry);
  /// The tile's first query row (in the sequence), and the warp's.
  void setRowBase(Value rowBase);
  /// Q, K/V through the pipeline and the key loop (over the `split`-th of
  /// `splits` parts of the keys when given), then `epilogue` on the final
  /// state.
  void mainLoop(GlobalSlab q, GlobalSlab k, GlobalSlab v, Value numRows,
                Value numKeys, function_ref<void(SoftmaxState)> epilogue,
                Value split = {}, Value splits = {});
  /// One key block: S = Q K^T, online softmax, O += P V, on `state`.
  void keyBlock(Value block, Value buffer, bool masked, SoftmaxState state);

  const FlashKernelConfig &cfg;
  LaneLayout lanes;
  std::optional<MmaSyncAtom> atom;
  std::optional<CpAsyncPipeline> pipeline;
  std::optional<KeyBlockRange> range;
  /// The tile's first query row in the sequence, its and the warp's first
  /// (packed: cfg.rowGroup) row, and the warp's in the shared Q tile.
  Value tileQueryBase, tileRowBase, warpRow, warpTileRow;
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
              masked, scores, state, /*fast=*/false);
  atom->multiplyValues(state.out(), scores, pipeline->valueTiles(), {buffer});
}

void MmaSyncFlashKernel::setRowBase(Value rowBase) {
  tileQueryBase = rowBase;
  tileRowBase = cfg.rowGroup() > 1 ? mul(rowBase, cfg.rowGroup()) : rowBase;
  warpTileRow = mul(lanes.warp, 16);
  warpRow = add(tileRowBase, warpTileRow);
}

void MmaSyncFlashKernel::mainLoop(GlobalSlab qSlab, GlobalSlab kSlab,
                                  GlobalSlab vSlab, Value numRows,
                                  Value numKeys,
                                  function_ref<void(SoftmaxState)> epilogue,
                                  Value split, Value splits) {
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim;
  ChunkSwizzle swizzle = ChunkSwizzle::forRowWidths(d, dv);
  pipeline.emplace(b, loc, cfg, lanes.thread, swizzle);
  pipeline->allocateTiles();
  // (Under the bottom-right causal mask a single query (Sq = 1) sees every
  // key: no masked blocks.)
  range.emplace(*this, cfg.causal && !cfg.singleQuery, cfg.keyBlock,
                tileQueryBase, cfg.queriesPerBlock(), numRows, numKeys,
                cfg.rowGroup());
  if (split)
    range->splitAcross(*this, split, splits);

  // Prologue: Q and the first block in one group.
  Value group = pipeline->loadFirst(qSlab, tileRowBase, numRows, kSlab, vSlab,
                                    numKeys, range->firstBlock());
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
  epilogue(SoftmaxState(state));
}

void MmaSyncFlashKernel::build(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim;
  ChunkSwizzle swizzle = ChunkSwizzle::forRowWidths(d, dv);
  lanes = LaneLayout::build(*this);
  atom.emplace(b, loc, cfg.elementType, lanes, swizzle);
  if (cfg.isPaged())
    buildPaged(entry);
  else
    buildDense(entry);
  gpu::ReturnOp::create(b, loc);
}

void MmaSyncFlashKernel::buildDense(Block &entry) {
  KernelArguments args(cfg, entry);
  Value numRows = args["Sq"], numKeys = args["Skv"];
  FlashTile tile = scheduleTile(*this, cfg.queryBlock());
  // A decode step's split kernel (Sq = 1): grid x is the split, the tile
  // the sequence's one query block.
  Value split;
  if (cfg.isSplit()) {
    split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    tile.rowBase = idx(0);
  }
  // A decode step's tile rows are the query of rowGroup heads of one K/V
  // head (grid y: their first head / rowGroup), so that each K/V block is
  // loaded once for them.
  if (cfg.rowGroup() > 1)
    tile.head = mul(tile.head, cfg.rowGroup());
  setRowBase(tile.rowBase);

  // The (batch, head) slabs of the flat operands; GQA heads share K/V.
  Value kvHead = div(tile.head, cfg.groupSize());
  Value gateHead = cfg.numGateHeads == 1 ? idx(0) : tile.head;
  auto slab = [&](StringRef name, Value h) {
    OperandStrides strides = args.strides(*this, name);
    return GlobalSlab{args[name], tile.slabOffset(*this, h, strides),
                      strides.row};
  };
  OperandStrides qStrides = args.strides(*this, "q");
  GlobalSlab qSlab{args["q"], tile.slabOffset(*this, tile.head, qStrides),
                   qStrides.row};
  if (cfg.rowGroup() > 1) {
    // Packed row p: the query of head tile.head + p, a head stride apart.
    qSlab.rowGroup = cfg.rowGroup();
    qSlab.groupStride = qStrides.head;
  }
  GlobalSlab kSlab = slab("k", kvHead);
  GlobalSlab vSlab = slab("v", kvHead);
  if (cfg.isSplit()) {
    Value partialOut = args["o_partial"], partialLse = args["lse_partial"],
          splits = args["splits"], numTokens = args["T"];
    mainLoop(
        qSlab, kSlab, vSlab, numRows, numKeys,
        [&](SoftmaxState state) {
          // Row (token, head) of split s, token b * Sq + row:
          // (s * T + token) * Hq + head, as the paged split kernel's.
          int64_t hq = cfg.numQueryHeads, dv = cfg.valueHeadDim;
          // (Separate statements: one order of the ops for every compiler.)
          Value batchToken = mul(tile.batch, numRows);
          Value token0 = add(mul(split, numTokens), batchToken);
          Value row0 = add(mul(token0, hq), tile.head);
          emitPartialEpilogue(*this, lanes, state, warpRow,
                              PartialOperands{partialOut, partialLse,
                                              mul(row0, dv), row0, numRows,
                                              idx(hq * dv), idx(hq),
                                              cfg.rowGroup(), dv, 1});
        },
        split, splits);
    return;
  }
  mainLoop(qSlab, kSlab, vSlab, numRows, numKeys, [&](SoftmaxState state) {
    // The gate's and the output's slabs only now: at D = 256 no register is
    // left to carry them through the loop.
    GlobalSlab gSlab = slab("gate", gateHead);
    GlobalSlab oSlab = slab("out", tile.head);
    EpilogueOperands operands{gSlab.buffer,   oSlab.buffer, gSlab.base,
                              oSlab.base,     numRows,      gSlab.rowStride,
                              oSlab.rowStride};
    if (cfg.rowGroup() > 1) {
      // Packed heads a head stride apart (a gate shared by them: 0).
      operands.rowGroup = cfg.rowGroup();
      if (cfg.numGateHeads != 1)
        operands.gateGroupStride = args.strides(*this, "gate").head;
      operands.outGroupStride = args.strides(*this, "out").head;
    }
    if (cfg.lse) {
      // [B, Hq, Sq]-contiguous: a packed head's rows are Sq further on.
      operands.lse = args["lse"];
      operands.lseBase =
          mul(tile.slab(*this, tile.head, cfg.numQueryHeads), numRows);
      if (cfg.rowGroup() > 1)
        operands.lseGroupStride = numRows;
    }
    emitGatedEpilogue(*this, cfg, lanes, state, warpRow, operands);
  });
}

void MmaSyncFlashKernel::buildPaged(Block &entry) {
  VarlenTile t = PagedTile::schedule(*this, cfg, entry);
  // The CTAs past the sequence's last block have nothing to do; the
  // condition is uniform, so the barriers inside stay CTA-wide.
  auto active = scf::IfOp::create(b, loc, t.active);
  b.setInsertionPointToStart(active.thenBlock());
  setRowBase(t.tile.rowBase);
  PagedTile paged(*this, cfg, entry, t);
  auto gatedEpilogue = [&](SoftmaxState state) {
    emitGatedEpilogue(*this, cfg, lanes, state, warpRow, paged.gatedEpilogue());
  };
  if (!cfg.isSplit()) {
    mainLoop(paged.query, paged.key, paged.value, t.numRows, paged.numKeys,
             gatedEpilogue);
    b.setInsertionPointAfter(active);
    return;
  }
  // Split-KV: this CTA's part of the keys, written without the gate as f32
  // partials [splits, T, Hq, Dv] with their LSE [splits, T, Hq].
  KernelArguments args(cfg, entry);
  Value partialOut = args["o_partial"], partialLse = args["lse_partial"],
        splits = args["splits"], numTokens = args["T"];
  Value split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  auto partialEpilogue = [&](SoftmaxState state) {
    Value firstRow = paged.reloadFirstRow();
    int64_t hq = cfg.numQueryHeads, dv = cfg.valueHeadDim;
    // Row (token, head) of split s: (s * T + token) * Hq + head.
    Value token0 = add(mul(split, numTokens), firstRow);
    Value row0 = add(mul(token0, hq), paged.head);
    emitPartialEpilogue(*this, lanes, state, warpRow,
                        PartialOperands{partialOut, partialLse, mul(row0, dv),
                                        row0, t.numRows, idx(hq * dv), idx(hq),
                                        cfg.rowGroup(), dv, 1});
  };
  mainLoop(paged.query, paged.key, paged.value, t.numRows, paged.numKeys,
           partialEpilogue, split, splits);
  b.setInsertionPointAfter(active);
}

void mlir::gated_attention::flash::buildMmaSyncFlashKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  MmaSyncFlashKernel(b, loc, cfg).build(func);
}
