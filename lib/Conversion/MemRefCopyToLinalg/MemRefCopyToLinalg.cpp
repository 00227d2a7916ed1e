//===- MemRefCopyToLinalg.cpp - memref.copy as linalg.copy ----------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/MemRefCopyToLinalg/MemRefCopyToLinalg.h"
#include "GatedAttention/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_CONVERTMEMREFCOPYTOLINALGPASS
#include "GatedAttention/Conversion/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;

namespace {
struct CopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                op.getTarget());
    return success();
  }
};

struct ConvertMemRefCopyToLinalgPass
    : gated_attention::impl::ConvertMemRefCopyToLinalgPassBase<
          ConvertMemRefCopyToLinalgPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    gated_attention::populateMemRefCopyToLinalgPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::gated_attention::populateMemRefCopyToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<CopyToLinalg>(patterns.getContext());
}
