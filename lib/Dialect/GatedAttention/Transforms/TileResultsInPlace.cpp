//===- TileResultsInPlace.cpp - tile results computed in the output -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Empty-tensor elimination for the insertions that end the scf.forall tile
// grids, before upstream's pass does the rest: upstream walks insertions
// innermost first, and a tile result built from pieces inserted into a
// tensor.empty then has its first piece computed off to the side and
// copied (the pass description in Passes.td has the example).
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONTILERESULTSINPLACEPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
/// Gives each use of a tensor.empty in another block than the first one's
/// an empty of its own. Upstream's elimination replaces an empty for one
/// of its anchors; with the two versions of a tile (all rows, or the rows
/// left at the end of the sequence) inserting into one empty, which version
/// got it, and which computed into a scratch buffer and copied, changed
/// from run to run. Two empties of one shape mean what one does; uses in
/// one block keep theirs, which bufferization may reuse in turn.
void splitSharedEmpties(RewriterBase &rewriter, ModuleOp module) {
  SmallVector<tensor::EmptyOp> empties;
  module.walk([&](tensor::EmptyOp op) { empties.push_back(op); });
  for (tensor::EmptyOp op : empties) {
    if (op->use_empty())
      continue;
    Block *first = (*op->user_begin())->getBlock();
    rewriter.setInsertionPointAfter(op);
    for (OpOperand &use : llvm::make_early_inc_range(op->getUses()))
      if (use.getOwner()->getBlock() != first)
        rewriter.modifyOpInPlace(use.getOwner(), [&] {
          use.set(rewriter.clone(*op)->getResult(0));
        });
  }
}

struct TileResultsInPlacePass
    : gated_attention::impl::GatedAttentionTileResultsInPlacePassBase<
          TileResultsInPlacePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(module.getContext());
    splitSharedEmpties(rewriter, module);
    SmallVector<scf::InParallelOp> terminators;
    module.walk([&](scf::InParallelOp op) { terminators.push_back(op); });
    if (terminators.empty())
      return;
    // The analysis upstream's eliminate-empty-tensors runs on a module.
    bufferization::OneShotBufferizationOptions options;
    options.allowReturnAllocsFromLoops = true;
    options.bufferizeFunctionBoundaries = true;
    bufferization::OneShotAnalysisState state(module, options);
    // Failures say why, as upstream's pass does.
    if (failed(bufferization::analyzeModuleOp(module, state))) {
      module.emitError() << "cannot analyze the module for bufferization";
      return signalPassFailure();
    }
    for (scf::InParallelOp terminator : terminators)
      if (failed(bufferization::eliminateEmptyTensors(rewriter, terminator,
                                                      state))) {
        terminator.emitError() << "failed to eliminate tensor.empty ops";
        return signalPassFailure();
      }
  }
};
} // namespace
