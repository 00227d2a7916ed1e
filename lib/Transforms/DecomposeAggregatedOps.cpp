//===- DecomposeAggregatedOps.cpp - decompose aggregated linalg ops -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_DECOMPOSEAGGREGATEDOPSPASS
#include "GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;

namespace {
struct DecomposeAggregatedOpsPass
    : gated_attention::impl::DecomposeAggregatedOpsPassBase<
          DecomposeAggregatedOpsPass> {
  void runOnOperation() override {
    SmallVector<linalg::AggregatedOpInterface> ops;
    getOperation()->walk(
        [&](linalg::AggregatedOpInterface op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::AggregatedOpInterface op : ops) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> parts = op.decomposeOperation(rewriter);
      if (failed(parts)) {
        op->emitError("could not be decomposed");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, *parts);
    }
  }
};
} // namespace
