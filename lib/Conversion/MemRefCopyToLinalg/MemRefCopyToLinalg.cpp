//===- MemRefCopyToLinalg.cpp - memref.copy as linalg.copy ----------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/MemRefCopyToLinalg/MemRefCopyToLinalg.h"
#include "GatedAttention/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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

/// The innermost size of `type` if it is static, its elements are unit
/// strided, and it fits `maxElements`; else 0.
int64_t vectorizableRowSize(MemRefType type, int64_t maxElements) {
  if (type.getRank() == 0 || !type.getElementType().isIntOrFloat())
    return 0;
  int64_t size = type.getShape().back();
  if (ShapedType::isDynamic(size) || size < 1 || size > maxElements)
    return 0;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return 0;
  return size;
}

/// A copy whose rows (innermost dimension) are static, unit strided and
/// at most `maxElements` long: a loop nest over the outer dimensions, each
/// row one vector load and store. (convert-linalg-to-loops would copy
/// element by element; llc does not vectorize loops.)
struct CopyRowsAsVectors : OpRewritePattern<memref::CopyOp> {
  CopyRowsAsVectors(MLIRContext *ctx, int64_t maxElements)
      : OpRewritePattern(ctx, /*benefit=*/2), maxElements(maxElements) {}

  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto source = dyn_cast<MemRefType>(op.getSource().getType());
    auto target = dyn_cast<MemRefType>(op.getTarget().getType());
    if (!source || !target ||
        source.getElementType() != target.getElementType())
      return failure();
    int64_t row = vectorizableRowSize(source, maxElements);
    if (!row || vectorizableRowSize(target, maxElements) != row)
      return failure();
    Location loc = op.getLoc();
    auto vectorType = VectorType::get({row}, source.getElementType());
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value padding = arith::ConstantOp::create(
        rewriter, loc, rewriter.getZeroAttr(source.getElementType()));
    SmallVector<Value> indices;
    OpBuilder::InsertionGuard guard(rewriter);
    for (int64_t d = 0, e = source.getRank() - 1; d < e; ++d) {
      Value size = memref::DimOp::create(rewriter, loc, op.getSource(), d);
      auto loop = scf::ForOp::create(rewriter, loc, zero, size, one);
      rewriter.setInsertionPoint(loop.getBody()->getTerminator());
      indices.push_back(loop.getInductionVar());
    }
    indices.push_back(zero);
    Value x = vector::TransferReadOp::create(rewriter, loc, vectorType,
                                             op.getSource(), indices, padding,
                                             ArrayRef<bool>{true});
    vector::TransferWriteOp::create(rewriter, loc, x, op.getTarget(), indices,
                                    ArrayRef<bool>{true});
    rewriter.eraseOp(op);
    return success();
  }

  int64_t maxElements;
};

struct ConvertMemRefCopyToLinalgPass
    : gated_attention::impl::ConvertMemRefCopyToLinalgPassBase<
          ConvertMemRefCopyToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    if (vectorRows > 0)
      patterns.add<CopyRowsAsVectors>(&getContext(), vectorRows);
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
