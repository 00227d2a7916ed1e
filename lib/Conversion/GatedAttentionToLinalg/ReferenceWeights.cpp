//===- ReferenceWeights.cpp - the reference lowerings' softmax ------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/ReferenceWeights.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;

Value mlir::gated_attention::splitQueryHeads(OpBuilder &b, Location loc,
                                             Value t, int64_t numKVHeads,
                                             int64_t groupSize) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<int64_t> shape = {type.getDimSize(0), numKVHeads, groupSize};
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, t, 0),
                                     b.getIndexAttr(numKVHeads),
                                     b.getIndexAttr(groupSize)};
  SmallVector<ReassociationIndices> reassociation = {{0}, {1, 2}};
  for (unsigned dim = 2; dim < type.getRank(); ++dim) {
    shape.push_back(type.getDimSize(dim));
    sizes.push_back(tensor::getMixedSize(b, loc, t, dim));
    reassociation.push_back({static_cast<int64_t>(dim + 1)});
  }
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), t,
      reassociation, sizes);
}

namespace {
using utils::IteratorType;

Value constantOf(OpBuilder &b, Location loc, Type type, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
}

/// A linalg.generic with one result into `init`; a loop dim is a reduction
/// iff the init's map does not use it.
Value generic(OpBuilder &b, Location loc, Value init, ValueRange inputs,
              ArrayRef<AffineMap> maps,
              function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<IteratorType> iterators(maps.back().getNumDims(),
                                      IteratorType::reduction);
  for (AffineExpr e : maps.back().getResults())
    if (auto dim = dyn_cast<AffineDimExpr>(e))
      iterators[dim.getPosition()] = IteratorType::parallel;
  return linalg::GenericOp::create(b, loc, TypeRange{init.getType()}, inputs,
                                   ValueRange{init}, maps, iterators, body)
      .getResult(0);
}

} // namespace

Value mlir::gated_attention::extendTo(OpBuilder &b, Location loc, Type acc,
                                      Value x) {
  return x.getType() == acc ? x : arith::ExtFOp::create(b, loc, acc, x);
}

Value mlir::gated_attention::filledTensor(OpBuilder &b, Location loc,
                                          ArrayRef<OpFoldResult> sizes,
                                          Type type, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, type);
  return linalg::FillOp::create(b, loc, constantOf(b, loc, type, value), empty)
      .getResult(0);
}

ReferenceWeights mlir::gated_attention::buildReferenceWeights(
    OpBuilder &b, Location loc, Value splitQuery, Value key,
    ArrayRef<OpFoldResult> rowSizes, OpFoldResult skv, bool causal,
    double scale) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> scoreSizes = llvm::to_vector(rowSizes);
  scoreSizes.push_back(skv);
  // Scores, weights and sums in the accumulator type (f32, or f64 for f64).
  Type acc = getAccumulatorType(
      cast<RankedTensorType>(splitQuery.getType()).getElementType());

  AffineExpr d0, d1, d2, d3, d4, d5;
  bindDims(ctx, d0, d1, d2, d3, d4, d5);
  auto map = [&](unsigned n, ArrayRef<AffineExpr> results) {
    return AffineMap::get(n, 0, results, ctx);
  };
  AffineMap id5 = map(5, {d0, d1, d2, d3, d4});
  AffineMap row5 = map(5, {d0, d1, d2, d3});
  double negInf = -std::numeric_limits<double>::infinity();

  // S[b, kh, r, i, j] = sum_d Q[b, kh, r, i, d] * K[b, kh, j, d]
  Value scores = generic(
      b, loc, filledTensor(b, loc, scoreSizes, acc, 0.0), {splitQuery, key},
      {map(6, {d0, d1, d2, d3, d5}), map(6, {d0, d1, d4, d5}),
       map(6, {d0, d1, d2, d3, d4})},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value prod =
            arith::MulFOp::create(nb, nl, extendTo(nb, nl, acc, args[0]),
                                  extendTo(nb, nl, acc, args[1]));
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::AddFOp::create(nb, nl, args[2], prod)});
      });

  // Scale, and the bottom-right aligned causal mask: key j is visible from
  // query i iff j <= i + (Skv - Sq).
  Value offset;
  if (causal)
    offset =
        buildCausalOffset(b, loc, getValueOrCreateConstantIndexOp(b, loc, skv),
                          getValueOrCreateConstantIndexOp(b, loc, rowSizes[3]));
  Value logits = generic(
      b, loc, tensor::EmptyOp::create(b, loc, scoreSizes, acc), {scores},
      {id5, id5}, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value s = arith::MulFOp::create(nb, nl, args[0],
                                        constantOf(nb, nl, acc, scale));
        if (offset) {
          Value i = linalg::IndexOp::create(nb, nl, 3);
          Value j = linalg::IndexOp::create(nb, nl, 4);
          s = arith::SelectOp::create(nb, nl,
                                      buildCausalVisible(nb, nl, j, i, offset),
                                      s, constantOf(nb, nl, acc, negInf));
        }
        linalg::YieldOp::create(nb, nl, ValueRange{s});
      });

  // m[b, kh, r, i] = max_j logits
  Value rowMax = generic(
      b, loc, filledTensor(b, loc, rowSizes, acc, negInf), {logits},
      {id5, row5}, [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::MaximumFOp::create(nb, nl, args[0], args[1])});
      });

  // P = exp(logits - m). A row without a visible key has m = -inf; it
  // subtracts 0 instead so that P = exp(-inf) = 0 rather than NaN.
  Value exps =
      generic(b, loc, tensor::EmptyOp::create(b, loc, scoreSizes, acc),
              {logits, rowMax}, {id5, row5, id5},
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value diff = arith::SubFOp::create(
                    nb, nl, args[0], buildSoftmaxShift(nb, nl, args[1]));
                linalg::YieldOp::create(
                    nb, nl, ValueRange{math::ExpOp::create(nb, nl, diff)});
              });

  // l[b, kh, r, i] = sum_j P
  Value rowSum = generic(
      b, loc, filledTensor(b, loc, rowSizes, acc, 0.0), {exps}, {id5, row5},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::AddFOp::create(nb, nl, args[0], args[1])});
      });
  return {exps, rowSum, rowMax, logits};
}
