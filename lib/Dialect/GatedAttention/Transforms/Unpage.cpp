//===- Unpage.cpp - paged attention as dense attention per sequence -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// gated_attention.paged_attention becomes a loop over the batch's
// sequences, each computed by the dense op on its queries and on its keys
// and values gathered through the block table. The dense op's bottom-right
// causal rule with Sq = q_b and Skv = seq_lens[b] is the paged op's, so
// every lowering of the dense op serves the paged one.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "IndexBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONUNPAGEPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
/// Rows [first, first + count) of a [T, H, W] tensor as [1, H, count, W].
Value sequenceRows(OpBuilder &b, Location loc, Value packed, Value first,
                   Value count) {
  auto type = cast<RankedTensorType>(packed.getType());
  int64_t heads = type.getDimSize(1), width = type.getDimSize(2);
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  Value slice = tensor::ExtractSliceOp::create(
      b, loc,
      RankedTensorType::get({ShapedType::kDynamic, heads, width},
                            type.getElementType()),
      packed, ArrayRef<OpFoldResult>{first, zero, zero},
      ArrayRef<OpFoldResult>{count, b.getIndexAttr(heads),
                             b.getIndexAttr(width)},
      ArrayRef<OpFoldResult>{one, one, one});
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{heads, ShapedType::kDynamic, width},
      type.getElementType(), ValueRange{count});
  Value transposed = linalg::TransposeOp::create(b, loc, slice, init,
                                                 ArrayRef<int64_t>{1, 0, 2})
                         .getResult()[0];
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({1, heads, ShapedType::kDynamic, width},
                            type.getElementType()),
      transposed, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(heads), count,
                             b.getIndexAttr(width)});
}

/// The first `length` tokens of sequence `seq` in a [NB, P, H, W] cache, as
/// [1, H, length, W]: token j is slot j mod P of page table[seq, j / P].
/// An scf.forall over the tokens, each copying its H x W row of the page
/// (contiguous in the cache) into place: the copy runs in parallel, row by
/// row, rather than element by element with a page lookup each.
Value sequenceKeys(OpBuilder &b, Location loc, Value cache, Value table,
                   Value seq, Value length) {
  auto type = cast<RankedTensorType>(cache.getType());
  int64_t page = type.getDimSize(1), heads = type.getDimSize(2),
          width = type.getDimSize(3);
  Type elem = type.getElementType();
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{1, heads, ShapedType::kDynamic, width}, elem,
      ValueRange{length});
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{length},
                                      ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  IndexBuilder ix{b, loc};
  Value j = forall.getInductionVar(0);
  Value pageId = ix.at(table, {seq, ix.div(j, ix.c(page))});
  Value slot = ix.rem(j, ix.c(page));
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  OpFoldResult h = b.getIndexAttr(heads), w = b.getIndexAttr(width);
  Value row = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({heads, width}, elem), cache,
      ArrayRef<OpFoldResult>{pageId, slot, zero, zero},
      ArrayRef<OpFoldResult>{one, one, h, w},
      ArrayRef<OpFoldResult>{one, one, one, one});
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, row, forall.getRegionOutArgs()[0],
      ArrayRef<OpFoldResult>{zero, zero, j, zero},
      ArrayRef<OpFoldResult>{one, h, one, w},
      ArrayRef<OpFoldResult>{one, one, one, one});
  return forall.getResult(0);
}

struct UnpageAttention : OpRewritePattern<PagedAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PagedAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexBuilder ix{rewriter, loc};
    RankedTensorType resultType = op.getResultType();
    int64_t hq = op.getNumQueryHeads(), dv = op.getValueHeadDim();
    Type elem = resultType.getElementType();
    Value tokens = ix.dim(op.getQuery(), 0);
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, resultType.getShape(), elem,
        resultType.isDynamicDim(0) ? ValueRange{tokens} : ValueRange{});
    Value zero = arith::ConstantOp::create(rewriter, loc, elem,
                                           rewriter.getZeroAttr(elem));
    Value init =
        linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    Value numSeqs = ix.dim(op.getSeqLens(), 0);
    auto loop = scf::ForOp::create(
        rewriter, loc, ix.c(0), numSeqs, ix.c(1), ValueRange{init},
        [&](OpBuilder &b, Location l, Value seq, ValueRange acc) {
          IndexBuilder bx{b, l};
          Value first = bx.at(op.getCuSeqlensQ(), {seq});
          Value next = arith::AddIOp::create(b, l, seq, bx.c(1));
          Value count = arith::SubIOp::create(
              b, l, bx.at(op.getCuSeqlensQ(), {next}), first);
          Value length = bx.at(op.getSeqLens(), {seq});
          Value q = sequenceRows(b, l, op.getQuery(), first, count);
          Value k = sequenceKeys(b, l, op.getKeyCache(), op.getBlockTable(),
                                 seq, length);
          Value v = sequenceKeys(b, l, op.getValueCache(), op.getBlockTable(),
                                 seq, length);
          Value g = op.hasGate()
                        ? sequenceRows(b, l, op.getGateInput(), first, count)
                        : Value();
          auto denseType =
              RankedTensorType::get({1, hq, ShapedType::kDynamic, dv}, elem);
          Value y = AttentionOp::create(
                        b, l, denseType, /*lse=*/Type(), q, k, v, g,
                        FloatAttr::get(b.getF32Type(), op.getScaleValue()),
                        op.getCausal(), op.getGate(), op.getCombine())
                        .getResult();
          // [1, Hq, q_b, Dv] -> [q_b, Hq, Dv] rows of the result.
          Value rows = tensor::CollapseShapeOp::create(
              b, l, y, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
          Value init = tensor::EmptyOp::create(
              b, l, ArrayRef<int64_t>{ShapedType::kDynamic, hq, dv}, elem,
              ValueRange{count});
          Value tokenMajor = linalg::TransposeOp::create(
                                 b, l, rows, init, ArrayRef<int64_t>{1, 0, 2})
                                 .getResult()[0];
          OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
          Value inserted = tensor::InsertSliceOp::create(
              b, l, tokenMajor, acc[0],
              ArrayRef<OpFoldResult>{first, zero, zero},
              ArrayRef<OpFoldResult>{count, b.getIndexAttr(hq),
                                     b.getIndexAttr(dv)},
              ArrayRef<OpFoldResult>{one, one, one});
          scf::YieldOp::create(b, l, inserted);
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

struct GatedAttentionUnpagePass
    : gated_attention::impl::GatedAttentionUnpagePassBase<
          GatedAttentionUnpagePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGatedAttentionUnpagePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::gated_attention::populateGatedAttentionUnpagePatterns(
    RewritePatternSet &patterns) {
  patterns.add<UnpageAttention>(patterns.getContext());
}
