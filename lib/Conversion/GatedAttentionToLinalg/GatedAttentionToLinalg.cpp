//===- GatedAttentionToLinalg.cpp - reference lowering to linalg ----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The reference lowering: plain linalg.generic ops on tensors that materialize
// the scores. Every faster path is tested against what this produces.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToLinalg/GatedAttentionToLinalg.h"
#include "GatedAttention/Conversion/ConvertAttentionOps.h"
#include "GatedAttention/Conversion/Passes.h"
#include "GatedAttention/Conversion/ReferenceWeights.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_CONVERTGATEDATTENTIONTOLINALGPASS
#include "GatedAttention/Conversion/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
using utils::IteratorType;

/// Builds the reference form of one attention op. All intermediate tensors
/// use the 5-D layout [B, Hkv, R, Sq, ...] (R = Hq / Hkv query heads per
/// key/value head), so key and value are indexed without copies.
class ReferenceBuilder {
public:
  ReferenceBuilder(AttentionOp op, PatternRewriter &b)
      : op(op), b(b), loc(op.getLoc()),
        accumulator(getAccumulatorType(op.getQueryType().getElementType())) {}

  /// The op's replacements: the result, and the log-sum-exp if asked.
  SmallVector<Value, 2> build();

private:
  /// The log-sum-exp [B, Hq, Sq] of the op's type from the weights.
  Value buildLse(const ReferenceWeights &weights,
                 ArrayRef<OpFoldResult> rowSizes);

  /// Extends a loaded element to the accumulator type (inputs may be
  /// f16 / bf16).
  Value toAcc(OpBuilder &nb, Location nl, Value x) {
    return extendTo(nb, nl, accumulator, x);
  }
  /// A tensor of `sizes` in the accumulator type filled with `init`.
  Value filled(ArrayRef<OpFoldResult> sizes, double init) {
    return filledTensor(b, loc, sizes, accumulator, init);
  }
  /// (d0, ..., d{n-1}) -> (the listed dims / constants).
  AffineMap map(unsigned numDims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(numDims, 0, results, b.getContext());
  }
  AttentionOp op;
  PatternRewriter &b;
  Location loc;
  /// Sums, weights and the log-sum-exp: f32, or f64 for f64 inputs.
  Type accumulator;
};
} // namespace

Value ReferenceBuilder::buildLse(const ReferenceWeights &weights,
                                 ArrayRef<OpFoldResult> rowSizes) {
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamic;
  dispatchIndexOpFoldResults(rowSizes, dynamic, shape);
  AffineMap id4 = b.getMultiDimIdentityMap(4);
  Value lse =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get(shape, accumulator)},
          ValueRange{weights.rowMax, weights.rowSum},
          ValueRange{tensor::EmptyOp::create(b, loc, rowSizes, accumulator)},
          ArrayRef<AffineMap>{id4, id4, id4},
          SmallVector<IteratorType>(4, IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value shift = buildSoftmaxShift(nb, nl, args[0]);
            linalg::YieldOp::create(nb, nl,
                                    buildLogSumExp(nb, nl, shift, args[1]));
          })
          .getResult(0);
  SmallVector<ReassociationIndices> mergeHeads = {{0}, {1, 2}, {3}};
  Value collapsed = tensor::CollapseShapeOp::create(b, loc, lse, mergeHeads);
  if (collapsed.getType() != op.getLse().getType())
    collapsed =
        tensor::CastOp::create(b, loc, op.getLse().getType(), collapsed);
  return collapsed;
}

SmallVector<Value, 2> ReferenceBuilder::build() {
  MLIRContext *ctx = b.getContext();
  Value query = op.getQuery(), key = op.getKey(), value = op.getValue(),
        gate = op.getGateInput();
  Type elementType = op.getQueryType().getElementType();
  int64_t hkv = op.getNumKVHeads(), r = op.getGroupSize();
  int64_t dv = op.getValueHeadDim();

  OpFoldResult batch = tensor::getMixedSize(b, loc, query, 0);
  OpFoldResult sq = tensor::getMixedSize(b, loc, query, 2);
  OpFoldResult skv = tensor::getMixedSize(b, loc, key, 2);
  SmallVector<OpFoldResult> rowSizes = {batch, b.getIndexAttr(hkv),
                                        b.getIndexAttr(r), sq};
  SmallVector<OpFoldResult> outSizes = llvm::to_vector(rowSizes);
  outSizes.push_back(b.getIndexAttr(dv));

  RankedTensorType queryType = op.getQueryType();
  SmallVector<int64_t> rowShape = {queryType.getDimSize(0), hkv, r,
                                   queryType.getDimSize(2)};
  SmallVector<int64_t> outShape = llvm::to_vector(rowShape);
  outShape.push_back(dv);

  Value q5 = splitQueryHeads(b, loc, query, hkv, r);
  ReferenceWeights weights = buildReferenceWeights(
      b, loc, q5, key, rowSizes, skv, op.getCausal(), op.getScaleValue());
  Value probs = weights.exps, rowSum = weights.rowSum;

  AffineExpr d0, d1, d2, d3, d4, d5;
  bindDims(ctx, d0, d1, d2, d3, d4, d5);
  auto par = IteratorType::parallel, red = IteratorType::reduction;
  // Row-wise maps over (b, kh, r, i, j).
  AffineMap id5 = map(5, {d0, d1, d2, d3, d4});
  AffineMap row5 = map(5, {d0, d1, d2, d3});

  // O[b, kh, r, i, e] = sum_j P[b, kh, r, i, j] * V[b, kh, j, e]
  auto accType = RankedTensorType::get(outShape, accumulator);
  Value acc = linalg::GenericOp::create(
                  b, loc, TypeRange{accType}, ValueRange{probs, value},
                  ValueRange{filled(outSizes, 0.0)},
                  ArrayRef<AffineMap>{map(6, {d0, d1, d2, d3, d5}),
                                      map(6, {d0, d1, d5, d4}),
                                      map(6, {d0, d1, d2, d3, d4})},
                  ArrayRef<IteratorType>{par, par, par, par, par, red},
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    Value prod = arith::MulFOp::create(nb, nl, args[0],
                                                       toAcc(nb, nl, args[1]));
                    Value sum = arith::AddFOp::create(nb, nl, args[2], prod);
                    linalg::YieldOp::create(nb, nl, sum);
                  })
                  .getResult(0);

  // Epilogue: out = combine(O / l, act(G)), converted to the element type.
  // The gate is indexed per query head (split like the query) or shared
  // (head 0), elementwise (channel e) or headwise (channel 0).
  // Without a gate the epilogue is O / l.
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  AffineExpr channel = op.isGateHeadwise() ? zero : d4;
  SmallVector<Value> inputs = {acc, rowSum};
  SmallVector<AffineMap> maps = {id5, row5};
  if (op.hasGate() && op.isGateShared()) {
    inputs.push_back(gate);
    maps.push_back(map(5, {d0, zero, d3, channel}));
  } else if (op.hasGate()) {
    inputs.push_back(splitQueryHeads(b, loc, gate, hkv, r));
    maps.push_back(map(5, {d0, d1, d2, d3, channel}));
  }
  maps.push_back(id5);
  auto gateFn = op.getGate();
  CombineKind combine = op.getCombine();
  bool hasGate = op.hasGate();
  auto outType = RankedTensorType::get(outShape, elementType);
  Value out =
      linalg::GenericOp::create(
          b, loc, TypeRange{outType}, inputs,
          ValueRange{tensor::EmptyOp::create(b, loc, outSizes, elementType)},
          maps, ArrayRef<IteratorType>{par, par, par, par, par},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value y = arith::MulFOp::create(
                nb, nl, args[0], buildInverseRowSum(nb, nl, args[1]));
            Value g = hasGate ? toAcc(nb, nl, args[2]) : Value();
            linalg::YieldOp::create(
                nb, nl,
                buildGatedOutput(nb, nl, y, g, gateFn, combine, elementType));
          })
          .getResult(0);

  SmallVector<ReassociationIndices> mergeHeads = {{0}, {1, 2}, {3}, {4}};
  Value collapsed = tensor::CollapseShapeOp::create(b, loc, out, mergeHeads);
  if (collapsed.getType() != op.getResultType())
    collapsed = tensor::CastOp::create(b, loc, op.getResultType(), collapsed);
  if (!op.hasLse())
    return {collapsed};
  return {collapsed, buildLse(weights, rowSizes)};
}

namespace {
struct AttentionToLinalgPattern : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, ReferenceBuilder(op, rewriter).build());
    return success();
  }
};

struct ConvertGatedAttentionToLinalgPass
    : gated_attention::impl::ConvertGatedAttentionToLinalgPassBase<
          ConvertGatedAttentionToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGatedAttentionToLinalgPatterns(patterns);
    if (failed(
            convertAttentionOps(getOperation(), std::move(patterns), wideOnly)))
      signalPassFailure();
  }
};
} // namespace

void mlir::gated_attention::populateGatedAttentionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionToLinalgPattern>(patterns.getContext());
}
