//===- TilesToOpenMP.cpp - CPU tile grids on OpenMP threads ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The tile grids of the CPU lowering (the scf.parallel loops that carry a
// #gated_attention.tile mapping) become OpenMP worksharing loops handed out
// one tile at a time (schedule(dynamic)), their growing loops last to
// first. Upstream's convert-scf-to-openmp gives every loop a static
// schedule: contiguous equal counts of tiles per thread, so under a causal
// mask the thread holding the last query blocks does up to twice the mean
// work while the others wait. Taken one by one in this order, the tiles
// that finish the grid are the shortest of its last (batch, head), so the
// threads end together; the loop order stays (batch, head, query block),
// so the threads read the same head's keys at the same time. Tiles are
// coarse (a query block against all its keys): taking them one by one
// costs nothing measurable.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONTILESTOOPENMPPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {

/// The tile mapping of `loop`, one entry per loop dimension, or an empty
/// list when it is not a tile grid.
SmallVector<TileMappingAttr> tileMapping(scf::ParallelOp loop) {
  auto mapping = loop->getAttrOfType<ArrayAttr>("mapping");
  if (!mapping || mapping.size() != loop.getNumLoops())
    return {};
  SmallVector<TileMappingAttr> tiles;
  for (Attribute entry : mapping) {
    auto tile = dyn_cast<TileMappingAttr>(entry);
    if (!tile)
      return {};
    tiles.push_back(tile);
  }
  return tiles;
}

/// omp.parallel { omp.wsloop schedule(dynamic) { omp.loop_nest ... } } with
/// the body in a memref.alloca_scope (as upstream does: a tile's stack
/// scratch is released each iteration). Growing dimensions iterate over
/// their block numbers k and the body sees lb + (n-1-k) step.
void lowerTileLoop(RewriterBase &rewriter, scf::ParallelOp loop,
                   ArrayRef<TileMappingAttr> tiles) {
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<Value> counts(tiles.size());
  omp::LoopNestOperands nest;
  for (unsigned i = 0, e = tiles.size(); i < e; ++i) {
    Value lb = loop.getLowerBound()[i], ub = loop.getUpperBound()[i],
          step = loop.getStep()[i];
    if (!tiles[i].getGrowing()) {
      nest.loopLowerBounds.push_back(lb);
      nest.loopUpperBounds.push_back(ub);
      nest.loopSteps.push_back(step);
      continue;
    }
    // No blocks where ub <= lb, as scf.parallel runs none.
    Value extent = arith::MaxSIOp::create(
        rewriter, loc, arith::SubIOp::create(rewriter, loc, ub, lb), zero);
    counts[i] = arith::CeilDivUIOp::create(rewriter, loc, extent, step);
    nest.loopLowerBounds.push_back(zero);
    nest.loopUpperBounds.push_back(counts[i]);
    nest.loopSteps.push_back(one);
  }
  nest.collapseNumLoops = rewriter.getI64IntegerAttr(tiles.size());

  auto parallel =
      omp::ParallelOp::create(rewriter, loc, omp::ParallelOperands());
  rewriter.createBlock(&parallel.getRegion());
  omp::WsloopOperands work;
  work.scheduleKind = omp::ClauseScheduleKindAttr::get(
      rewriter.getContext(), omp::ClauseScheduleKind::Dynamic);
  auto wsloop = omp::WsloopOp::create(rewriter, loc, work);
  omp::TerminatorOp::create(rewriter, loc);
  rewriter.createBlock(&wsloop.getRegion());
  auto loopNest = omp::LoopNestOp::create(rewriter, loc, nest);
  Block *entry = rewriter.createBlock(
      &loopNest.getRegion(), {},
      SmallVector<Type>(tiles.size(), rewriter.getIndexType()),
      SmallVector<Location>(tiles.size(), loc));

  // The body's induction variables.
  SmallVector<Value> ivs(tiles.size());
  for (unsigned i = 0, e = tiles.size(); i < e; ++i) {
    Value k = entry->getArgument(i);
    if (!tiles[i].getGrowing()) {
      ivs[i] = k;
      continue;
    }
    Value last = arith::SubIOp::create(rewriter, loc, counts[i], one);
    Value block = arith::SubIOp::create(rewriter, loc, last, k);
    Value offset =
        arith::MulIOp::create(rewriter, loc, block, loop.getStep()[i]);
    ivs[i] =
        arith::AddIOp::create(rewriter, loc, loop.getLowerBound()[i], offset);
  }
  auto scope = memref::AllocaScopeOp::create(rewriter, loc, TypeRange());
  omp::YieldOp::create(rewriter, loc, ValueRange());
  Block *scopeBlock = rewriter.createBlock(&scope.getBodyRegion());
  rewriter.mergeBlocks(loop.getBody(), scopeBlock, ivs);
  rewriter.eraseOp(scopeBlock->getTerminator()); // scf.reduce
  rewriter.setInsertionPointToEnd(scopeBlock);
  memref::AllocaScopeReturnOp::create(rewriter, loc, ValueRange());
  rewriter.eraseOp(loop);
}

struct GatedAttentionTilesToOpenMPPass
    : gated_attention::impl::GatedAttentionTilesToOpenMPPassBase<
          GatedAttentionTilesToOpenMPPass> {
  void runOnOperation() override {
    SmallVector<std::pair<scf::ParallelOp, SmallVector<TileMappingAttr>>> grids;
    // Outermost grids only: a nested grid runs inside its parent's tile.
    getOperation()->walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      SmallVector<TileMappingAttr> tiles = tileMapping(loop);
      if (tiles.empty() || loop.getNumReductions() != 0)
        return WalkResult::advance();
      grids.emplace_back(loop, std::move(tiles));
      return WalkResult::skip();
    });
    IRRewriter rewriter(&getContext());
    for (auto &[loop, tiles] : grids)
      lowerTileLoop(rewriter, loop, tiles);
  }
};

} // namespace
