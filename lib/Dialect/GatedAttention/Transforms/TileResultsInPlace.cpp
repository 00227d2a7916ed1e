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
struct TileResultsInPlacePass
    : gated_attention::impl::GatedAttentionTileResultsInPlacePassBase<
          TileResultsInPlacePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
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
    IRRewriter rewriter(module.getContext());
    for (scf::InParallelOp terminator : terminators)
      if (failed(bufferization::eliminateEmptyTensors(rewriter, terminator,
                                                      state))) {
        terminator.emitError() << "failed to eliminate tensor.empty ops";
        return signalPassFailure();
      }
  }
};
} // namespace
