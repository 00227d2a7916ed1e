//===- BackwardTile.cpp - the tiles of the FlashAttention-2 backward ------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The per-tile pieces of the tiled backward (BackwardTile.h): loops, tiles
// of rows padded to static shapes, contractions in the form VectorizeTiles
// register-tiles, and the recomputed weights.
//
//===----------------------------------------------------------------------===//

#include "BackwardTile.h"
#include "OnlineSoftmaxTile.h"

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;

static constexpr double kNegInf = -std::numeric_limits<double>::infinity();

BackwardTileBuilder::BackwardTileBuilder(RewriterBase &b,
                                         AttentionBackwardOp op,
                                         int64_t queryBlock, int64_t keyBlock,
                                         bool pairOperands)
    : b(b), op(op), loc(op.getLoc()), f32(b.getF32Type()),
      elementType(op.getQueryType().getElementType()), bq(queryBlock),
      bk(keyBlock), d(op.getHeadDim()), dv(op.getValueHeadDim()),
      group(op.getGroupSize()), scale(op.getScaleValue()),
      causal(op.getCausal()),
      pairOperands(pairOperands && elementType.isBF16()) {
  b.setInsertionPoint(op);
  batch = dim(op.getQuery(), 0);
  numRows = dim(op.getQuery(), 2);
  numKeys = dim(op.getKey(), 2);
  if (causal)
    causalOffset = buildCausalOffset(b, loc, numKeys, numRows);
}

SmallVector<Value> BackwardTileBuilder::forall(
    ArrayRef<Value> bounds, ValueRange outputs,
    function_ref<SmallVector<TileWrite>(ValueRange ivs)> body) {
  auto loop = scf::ForallOp::create(b, loc, getAsOpFoldResult(bounds), outputs,
                                    std::nullopt);
  markOnlineSoftmaxLoop(loop);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<TileWrite> writes = body(loop.getInductionVars());
  // Each tile is cut to its real rows, then inserted in parallel.
  SmallVector<Value> sources;
  for (const TileWrite &w : writes) {
    auto type = cast<RankedTensorType>(w.tile.getType());
    if (getConstantIntValue(w.rows) == type.getDimSize(0)) {
      sources.push_back(w.tile);
      continue;
    }
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {w.rows};
    if (type.getRank() == 2)
      sizes.push_back(b.getIndexAttr(type.getDimSize(1)));
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    sources.push_back(tensor::ExtractSliceOp::create(
        b, loc, tensor::ExtractSliceOp::inferResultType(type, sizes), w.tile,
        offsets, sizes, strides));
  }
  b.setInsertionPointToStart(loop.getTerminator().getBody());
  for (auto [w, source] : llvm::zip(writes, sources)) {
    Value dest = loop.getRegionIterArgs()[w.output];
    auto destType = cast<RankedTensorType>(dest.getType());
    SmallVector<OpFoldResult> offsets = {w.batch, w.head, w.row0};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                       w.rows};
    if (destType.getRank() == 4) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(destType.getDimSize(3)));
    }
    SmallVector<OpFoldResult> strides(destType.getRank(), b.getIndexAttr(1));
    tensor::ParallelInsertSliceOp::create(b, loc, source, dest, offsets, sizes,
                                          strides);
  }
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> BackwardTileBuilder::blockForall(
    int64_t heads, Value limit, int64_t block, ValueRange outputs,
    function_ref<SmallVector<TileWrite>(Value, Value, Value, OpFoldResult)>
        body) {
  Value whole = arith::DivUIOp::create(b, loc, limit, index(block));
  Value partial = arith::SubIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, limit, index(block)), whole);
  SmallVector<Value> results =
      forall({batch, index(heads), whole}, outputs, [&](ValueRange ivs) {
        Value row0 = arith::MulIOp::create(b, loc, ivs[2], index(block));
        return body(ivs[0], ivs[1], row0, b.getIndexAttr(block));
      });
  // At most one partial block per (batch, head), after the whole ones.
  return forall({batch, index(heads), partial}, results, [&](ValueRange ivs) {
    Value row0 = arith::MulIOp::create(b, loc, whole, index(block));
    return body(ivs[0], ivs[1], row0,
                arith::SubIOp::create(b, loc, limit, row0).getResult());
  });
}

SmallVector<Value> BackwardTileBuilder::forLoop(
    Value lb, Value ub, Value step, ValueRange inits,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  return SmallVector<Value>(
      buildForLoop(b, loc, lb, ub, step, inits, body).getResults());
}

SmallVector<Value> BackwardTileBuilder::blockLoop(Value lb, Value ub,
                                                  int64_t block, Value limit,
                                                  ValueRange inits,
                                                  BlockBody body) {
  Value span = arith::MaxSIOp::create(b, loc, index(0),
                                      arith::SubIOp::create(b, loc, ub, lb));
  Value wholeEnd = arith::AddIOp::create(
      b, loc, lb,
      arith::MulIOp::create(b, loc,
                            arith::DivUIOp::create(b, loc, span, index(block)),
                            index(block)));
  SmallVector<Value> state = forLoop(
      lb, wholeEnd, index(block), inits, [&](Value start, ValueRange iter) {
        return body(start, b.getIndexAttr(block), iter);
      });
  // At most one iteration: the partial block.
  return forLoop(
      wholeEnd, ub, index(block), state, [&](Value start, ValueRange iter) {
        Value size = arith::MinSIOp::create(
            b, loc, index(block), arith::SubIOp::create(b, loc, limit, start));
        return body(start, size, iter);
      });
}

Value BackwardTileBuilder::rowsOf(Value source, Value batchIv, Value head,
                                  Value row0, OpFoldResult rows, int64_t block,
                                  bool widen, bool flat) {
  auto type = cast<RankedTensorType>(source.getType());
  Type element = type.getElementType();
  bool hasWidth = type.getRank() == 4;
  int64_t width = hasWidth ? type.getDimSize(3) : 1;
  SmallVector<OpFoldResult> offsets = {batchIv, head, row0};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                     rows};
  if (hasWidth) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(width));
  }
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  bool twoD = hasWidth && !flat;
  bool whole = getConstantIntValue(rows) == block;
  SmallVector<int64_t> tileShape = {block};
  if (twoD)
    tileShape.push_back(width);
  // [rows] or [rows, W] of the [1, 1, rows(, W)] region: static where rows
  // is (a static Sq or Skv).
  auto sliceType = tensor::ExtractSliceOp::inferCanonicalRankReducedResultType(
      tileShape.size(), type, sizes);
  Value tile = tensor::ExtractSliceOp::create(b, loc, sliceType, source,
                                              offsets, sizes, strides);
  if (!whole) {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
    tile = tensor::createPadHighOp(RankedTensorType::get(tileShape, element),
                                   tile, zero, /*nofold=*/false, loc, b);
  }
  if (!widen || element == f32)
    return tile;
  AffineMap id = b.getMultiDimIdentityMap(tileShape.size());
  return generic(tile, tensor::EmptyOp::create(b, loc, tileShape, f32),
                 {id, id},
                 [&](OpBuilder &nb, ValueRange a) { return toF32(nb, a[0]); });
}

Value BackwardTileBuilder::putRows(Value dest, Value tile, Value batchIv,
                                   Value head, Value row0, OpFoldResult rows) {
  auto type = cast<RankedTensorType>(tile.getType());
  int64_t width = type.getDimSize(1);
  if (getConstantIntValue(rows) != type.getDimSize(0)) {
    SmallVector<OpFoldResult> sizes = {rows, b.getIndexAttr(width)};
    tile = tensor::ExtractSliceOp::create(
        b, loc, tensor::ExtractSliceOp::inferResultType(type, sizes), tile,
        ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)}, sizes,
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }
  SmallVector<OpFoldResult> offsets = {batchIv, head, row0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1), rows,
                                     b.getIndexAttr(width)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, tile, dest, offsets, sizes,
                                       strides);
}

Value BackwardTileBuilder::generic(
    ValueRange ins, Value init, ArrayRef<AffineMap> maps,
    function_ref<Value(OpBuilder &, ValueRange)> body) {
  AffineMap initMap = maps.back();
  SmallVector<utils::IteratorType> iterators(initMap.getNumDims(),
                                             utils::IteratorType::reduction);
  for (AffineExpr e : initMap.getResults())
    if (auto dimExpr = dyn_cast<AffineDimExpr>(e))
      iterators[dimExpr.getPosition()] = utils::IteratorType::parallel;
  return buildGeneric(b, loc, ins, init, maps, iterators, body);
}

Value BackwardTileBuilder::contract(Value lhs, AffineMap lhsMap, Value rhs,
                                    AffineMap rhsMap, Value init) {
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  return generic({lhs, rhs}, init, {lhsMap, rhsMap, map(3, {d0, d1})},
                 [&](OpBuilder &nb, ValueRange a) -> Value {
                   Value prod = arith::MulFOp::create(nb, loc, toF32(nb, a[0]),
                                                      toF32(nb, a[1]));
                   return arith::AddFOp::create(nb, loc, a[2], prod);
                 });
}

Value BackwardTileBuilder::filled(ArrayRef<int64_t> shape, double v) {
  return buildFreshFill(b, loc, getAsIndexOpFoldResult(b.getContext(), shape),
                        v);
}

Value BackwardTileBuilder::rounded(Value tile) {
  if (elementType == f32)
    return tile;
  auto type = cast<RankedTensorType>(tile.getType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  Type element = elementType;
  return generic(tile,
                 tensor::EmptyOp::create(b, loc, type.getShape(), element),
                 {id, id}, [&](OpBuilder &nb, ValueRange a) -> Value {
                   return arith::TruncFOp::create(nb, loc, element, a[0]);
                 });
}

Value BackwardTileBuilder::visible(OpBuilder &nb, Value row, Value key) {
  auto less = [&](Value x, Value y) {
    return arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::slt, x, y);
  };
  Value result =
      arith::AndIOp::create(nb, loc, less(row, numRows), less(key, numKeys));
  if (causal)
    result = arith::AndIOp::create(
        nb, loc, result, buildCausalVisible(nb, loc, key, row, causalOffset));
  return result;
}

Value BackwardTileBuilder::weights(Value scores, Value lse, Value row0,
                                   Value key0, bool keyMajor) {
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  AffineExpr rowDim = keyMajor ? d1 : d0;
  SmallVector<int64_t> shape =
      keyMajor ? SmallVector<int64_t>{bk, bq} : SmallVector<int64_t>{bq, bk};
  return generic(
      {scores, lse}, tensor::EmptyOp::create(b, loc, shape, f32),
      {map(2, {d0, d1}), map(2, {rowDim}), map(2, {d0, d1})},
      [&](OpBuilder &nb, ValueRange a) -> Value {
        Value row = arith::AddIOp::create(
            nb, loc, row0, linalg::IndexOp::create(nb, loc, keyMajor ? 1 : 0));
        Value key = arith::AddIOp::create(
            nb, loc, key0, linalg::IndexOp::create(nb, loc, keyMajor ? 0 : 1));
        Value scaled =
            arith::MulFOp::create(nb, loc, a[0], f32Const(nb, scale));
        Value p = math::ExpOp::create(
            nb, loc, arith::SubFOp::create(nb, loc, scaled, a[1]));
        return arith::SelectOp::create(nb, loc, visible(nb, row, key), p,
                                       f32Const(nb, 0.0));
      });
}

Value BackwardTileBuilder::scoreGrads(Value p, Value dp, Value delta,
                                      bool keyMajor, Type element) {
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  AffineMap ij = map(2, {d0, d1});
  auto shape = cast<RankedTensorType>(p.getType()).getShape();
  if (!element)
    element = f32;
  return generic({p, dp, delta},
                 tensor::EmptyOp::create(b, loc, shape, element),
                 {ij, ij, map(2, {keyMajor ? d1 : d0}), ij},
                 [&](OpBuilder &nb, ValueRange a) -> Value {
                   Value ds = buildScoreGrad(nb, loc, a[0], a[1], a[2], scale);
                   return element == f32
                              ? ds
                              : arith::TruncFOp::create(nb, loc, element, ds);
                 });
}

Value BackwardTileBuilder::transposed(Value tile) {
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  auto type = cast<RankedTensorType>(tile.getType());
  return generic(
      tile,
      tensor::EmptyOp::create(b, loc, {type.getDimSize(1), type.getDimSize(0)},
                              type.getElementType()),
      {map(2, {d1, d0}), map(2, {d0, d1})},
      [](OpBuilder &, ValueRange a) { return a[0]; });
}

Value BackwardTileBuilder::keyEnd(Value row0, Value rows) {
  if (!causal)
    return numKeys;
  Value last = arith::SubIOp::create(
      b, loc, arith::AddIOp::create(b, loc, row0, rows), index(1));
  Value bound = buildCausalKeyBound(b, loc, last, causalOffset);
  return arith::MaxSIOp::create(b, loc, index(0),
                                arith::MinSIOp::create(b, loc, bound, numKeys));
}

Value BackwardTileBuilder::firstRow(Value key0) {
  if (!causal)
    return index(0);
  return arith::MaxSIOp::create(
      b, loc, index(0), arith::SubIOp::create(b, loc, key0, causalOffset));
}

/// `sizes` with constant values as attributes: static dims.
static SmallVector<OpFoldResult> foldedSizes(ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> folded;
  for (OpFoldResult size : sizes)
    folded.push_back(isa<Value>(size) ? getAsOpFoldResult(cast<Value>(size))
                                      : size);
  return folded;
}

Value BackwardTileBuilder::newTensor(ArrayRef<OpFoldResult> sizes, Type type) {
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  dispatchIndexOpFoldResults(foldedSizes(sizes), dynamicSizes, shape);
  return bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get(shape, type), dynamicSizes);
}

Value BackwardTileBuilder::resultTensor(ArrayRef<OpFoldResult> sizes,
                                        Type type) {
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  dispatchIndexOpFoldResults(foldedSizes(sizes), dynamicSizes, shape);
  return tensor::EmptyOp::create(b, loc, shape, type, dynamicSizes);
}

Value BackwardTileBuilder::castTo(Value t, Type type) {
  if (t.getType() == type)
    return t;
  return tensor::CastOp::create(b, loc, type, t);
}

Value BackwardTileBuilder::recomputeLse(Value q, Value batchIv, Value kvHead,
                                        Value row0, Value rows) {
  AffineExpr d0, d1, d2;
  bindDims(b.getContext(), d0, d1, d2);
  AffineMap ij = map(2, {d0, d1}), i = map(2, {d0}), i1 = map(1, {d0});
  // The online softmax's running maximum m and sum l = sum exp(s - m).
  SmallVector<Value> state = blockLoop(
      index(0), keyEnd(row0, rows), bk, numKeys,
      {filled({bq}, kNegInf), filled({bq}, 0.0)},
      [&](Value key0, OpFoldResult cols, ValueRange s) -> SmallVector<Value> {
        Value k = rowsOf(op.getKey(), batchIv, kvHead, key0, cols, bk, true);
        Value scores = contract(q, map(3, {d0, d2}), k, map(3, {d1, d2}),
                                filled({bq, bk}, 0.0));
        Value masked = generic(
            scores, tensor::EmptyOp::create(b, loc, {bq, bk}, f32), {ij, ij},
            [&](OpBuilder &nb, ValueRange a) -> Value {
              Value row = arith::AddIOp::create(
                  nb, loc, row0, linalg::IndexOp::create(nb, loc, 0));
              Value key = arith::AddIOp::create(
                  nb, loc, key0, linalg::IndexOp::create(nb, loc, 1));
              Value scaled =
                  arith::MulFOp::create(nb, loc, a[0], f32Const(nb, scale));
              return arith::SelectOp::create(nb, loc, visible(nb, row, key),
                                             scaled, f32Const(nb, kNegInf));
            });
        Value blockMax =
            generic(masked, filled({bq}, kNegInf), {ij, i},
                    [&](OpBuilder &nb, ValueRange a) -> Value {
                      return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
                    });
        Value m = generic(
            {s[0], blockMax}, tensor::EmptyOp::create(b, loc, {bq}, f32),
            {i1, i1, i1}, [&](OpBuilder &nb, ValueRange a) {
              return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
            });
        // l exp(m_old - m) + sum_j exp(s_j - m), the shift 0 while m = -inf.
        Value l =
            generic({s[0], m}, s[1], {i1, i1, i1},
                    [&](OpBuilder &nb, ValueRange a) -> Value {
                      Value shift = buildSoftmaxShift(nb, loc, a[1]);
                      Value f = buildWeightExp(
                          nb, loc, arith::SubFOp::create(nb, loc, a[0], shift));
                      return arith::MulFOp::create(nb, loc, a[2], f);
                    });
        l = generic({masked, m}, l, {ij, i, i},
                    [&](OpBuilder &nb, ValueRange a) -> Value {
                      Value shift = buildSoftmaxShift(nb, loc, a[1]);
                      Value e = buildWeightExp(
                          nb, loc, arith::SubFOp::create(nb, loc, a[0], shift));
                      return arith::AddFOp::create(nb, loc, a[2], e);
                    });
        return {m, l};
      });
  // L = m + log l: -inf for a row that saw no key (l = 0).
  return generic({state[0], state[1]},
                 tensor::EmptyOp::create(b, loc, {bq}, f32), {i1, i1, i1},
                 [&](OpBuilder &nb, ValueRange a) -> Value {
                   Value shift = buildSoftmaxShift(nb, loc, a[0]);
                   return arith::AddFOp::create(
                       nb, loc, shift, math::LogOp::create(nb, loc, a[1]));
                 });
}

Value BackwardTileBuilder::recomputeOutput(Value q, Value lse, Value batchIv,
                                           Value kvHead, Value row0,
                                           Value rows) {
  AffineExpr d0, d1, d2;
  bindDims(b.getContext(), d0, d1, d2);
  return blockLoop(
             index(0), keyEnd(row0, rows), bk, numKeys, {filled({bq, dv}, 0.0)},
             [&](Value key0, OpFoldResult cols,
                 ValueRange acc) -> SmallVector<Value> {
               Value k =
                   rowsOf(op.getKey(), batchIv, kvHead, key0, cols, bk, true);
               Value v =
                   rowsOf(op.getValue(), batchIv, kvHead, key0, cols, bk, true);
               Value scores = contract(q, map(3, {d0, d2}), k, map(3, {d1, d2}),
                                       filled({bq, bk}, 0.0));
               Value p = weights(scores, lse, row0, key0);
               return {
                   contract(p, map(3, {d0, d2}), v, map(3, {d2, d1}), acc[0])};
             })
      .front();
}
