//===- OnlineSoftmax.cpp - attention as a FlashAttention-2 key loop -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Decomposes gated_attention.attention into the online-softmax form: per
// (batch, GQA group), one query tile, a sequential loop over key blocks
// carrying (m, l, acc), and the gate applied in the epilogue before the
// single store.
// The tile math is upstream linalg on tensor tiles, so upstream tiling,
// vectorization and bufferization apply to it unchanged.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
using utils::IteratorType;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Builds the online-softmax form of one attention op.
class OnlineSoftmaxBuilder {
public:
  OnlineSoftmaxBuilder(RewriterBase &b, AttentionOp op,
                       const OnlineSoftmaxOptions &options)
      : b(b), op(op), loc(op.getLoc()), f32(b.getF32Type()),
        elementType(op.getQueryType().getElementType()),
        keyBlock(options.keyBlock) {}

  Value build();

private:
  struct State {
    Value m, l, acc;
  };

  // Small builders.
  Value f32Const(OpBuilder &nb, double v) {
    return arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(v));
  }
  Value toF32(OpBuilder &nb, Value x) {
    return x.getType() == f32 ? x : arith::ExtFOp::create(nb, loc, f32, x);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value empty(ArrayRef<OpFoldResult> sizes, Type t) {
    return tensor::EmptyOp::create(b, loc, sizes, t);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double v) {
    return linalg::FillOp::create(b, loc, f32Const(b, v), empty(sizes, f32))
        .getResult(0);
  }
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(dims, 0, results, b.getContext());
  }
  /// A linalg.generic with one init (whose type is the result type).
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iterators,
                function_ref<Value(OpBuilder &, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps,
               iterators,
               [&](OpBuilder &nb, Location, ValueRange args) {
                 linalg::YieldOp::create(nb, loc, body(nb, args));
               })
        .getResult(0);
  }
  /// scf.for from `lb` to `ub` carrying `inits`; `body` builds at the
  /// rewriter's insertion point and returns the yielded values.
  scf::ForOp forLoop(Value lb, Value ub, Value step, ValueRange inits,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, step, inits);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> yielded =
        body(loop.getInductionVar(), loop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, yielded);
    return loop;
  }

  /// `rows x width` slice of head `head` of a 4-D operand at row `row`,
  /// padded with zeros to `paddedRows` rows when that is larger.
  Value tile(Value source, Value batch, Value head, OpFoldResult row,
             OpFoldResult rows, OpFoldResult paddedRows);

  /// The tiles of heads firstHead .. firstHead + stack - 1 of `source`,
  /// each padded to `rowsTile` rows, stacked into one `tileRows x width`
  /// tile. `shared` reads head 0 for every one of them.
  Value stackedTile(Value source, Value batch, Value firstHead, bool shared);

  Value queryTile(Value batch, Value firstHead);
  State keyBlockStep(Value q, Value k, Value v, State s, Value kb, bool masked);
  Value epilogue(State s, Value gate);
  /// The online softmax for heads firstHead .. firstHead + stack - 1, which
  /// share one key/value head: one query tile of `tileRows` rows.
  Value buildGroup(Value batch, Value firstHead);

  RewriterBase &b;
  AttentionOp op;
  Location loc;
  Type f32, elementType;
  int64_t keyBlock;
  // Per-op values set by build(): the op's rows, the rows of one head's
  // padded tile, how many heads of one GQA group share a query tile (all of
  // them when the rows are padded to a static count), and the stacked rows.
  OpFoldResult rows, rowsTile;
  int64_t stack = 1;
  OpFoldResult tileRows;
  Value numKeys, causalOffset;
};
} // namespace

Value OnlineSoftmaxBuilder::tile(Value source, Value batch, Value head,
                                 OpFoldResult row, OpFoldResult rows,
                                 OpFoldResult paddedRows) {
  auto type = cast<RankedTensorType>(source.getType());
  int64_t width = type.getDimSize(3);
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  SmallVector<OpFoldResult> offsets = {batch, head, row, zero};
  SmallVector<OpFoldResult> sizes = {one, one, rows, b.getIndexAttr(width)};
  SmallVector<OpFoldResult> strides(4, one);
  std::optional<int64_t> staticRows = getConstantIntValue(rows);
  auto sliceType =
      RankedTensorType::get({staticRows.value_or(ShapedType::kDynamic), width},
                            type.getElementType());
  Value slice = tensor::ExtractSliceOp::create(b, loc, sliceType, source,
                                               offsets, sizes, strides);
  std::optional<int64_t> padded = getConstantIntValue(paddedRows);
  if (!padded || staticRows == padded)
    return slice;
  auto paddedType =
      RankedTensorType::get({*padded, width}, type.getElementType());
  Value zeroElt =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  return tensor::createPadHighOp(paddedType, slice, zeroElt, /*nofold=*/false,
                                 loc, b);
}

Value OnlineSoftmaxBuilder::stackedTile(Value source, Value batch,
                                        Value firstHead, bool shared) {
  auto headTile = [&](int64_t r) {
    Value head =
        shared ? index(0) : arith::AddIOp::create(b, loc, firstHead, index(r));
    return tile(source, batch, head, b.getIndexAttr(0), rows, rowsTile);
  };
  if (stack == 1)
    return headTile(0);
  auto type = cast<RankedTensorType>(source.getType());
  int64_t width = type.getDimSize(3), headRows = *getConstantIntValue(rowsTile);
  Value stacked = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{stack * headRows, width},
      type.getElementType());
  for (int64_t r = 0; r < stack; ++r) {
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(r * headRows),
                                         b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {rowsTile, b.getIndexAttr(width)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    stacked = tensor::InsertSliceOp::create(b, loc, headTile(r), stacked,
                                            offsets, sizes, strides);
  }
  return stacked;
}

Value OnlineSoftmaxBuilder::queryTile(Value batch, Value firstHead) {
  // Extended to f32 and pre-scaled once per tile, not once per key block.
  Value q = stackedTile(op.getQuery(), batch, firstHead, /*shared=*/false);
  double scale = op.getScaleValue();
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  return generic(q, empty({tileRows, b.getIndexAttr(op.getHeadDim())}, f32),
                 {id2, id2}, {IteratorType::parallel, IteratorType::parallel},
                 [&](OpBuilder &nb, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, loc, toF32(nb, args[0]),
                                                f32Const(nb, scale));
                 });
}

OnlineSoftmaxBuilder::State OnlineSoftmaxBuilder::keyBlockStep(Value q, Value k,
                                                               Value v, State s,
                                                               Value kb,
                                                               bool masked) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  auto par = IteratorType::parallel, red = IteratorType::reduction;
  OpFoldResult bk = b.getIndexAttr(keyBlock);
  AffineMap ij = map(2, {d0, d1}), i = map(2, {d0}), i1 = map(1, {d0});

  // S = Q_blk K_blkᵀ (the scale is already in Q).
  Value scores =
      generic({q, k}, filled({tileRows, bk}, 0.0),
              {map(3, {d0, d2}), map(3, {d1, d2}), map(3, {d0, d1})},
              {par, par, red}, [&](OpBuilder &nb, ValueRange a) -> Value {
                Value prod =
                    arith::MulFOp::create(nb, loc, a[0], toF32(nb, a[1]));
                return arith::AddFOp::create(nb, loc, a[2], prod);
              });

  // Blocks on the causal diagonal or past the last key: key kb + j is
  // visible from row i iff kb + j < Skv and (causal) kb + j <= i + offset.
  if (masked)
    scores =
        generic({}, scores, {ij}, {par, par},
                [&](OpBuilder &nb, ValueRange a) -> Value {
                  // Row of the tile's head: stacked heads repeat the row range.
                  Value row = linalg::IndexOp::create(nb, loc, 0);
                  if (stack > 1)
                    row = arith::RemUIOp::create(
                        nb, loc, row,
                        arith::ConstantIndexOp::create(
                            nb, loc, *getConstantIntValue(rowsTile)));
                  Value col = linalg::IndexOp::create(nb, loc, 1);
                  Value key = arith::AddIOp::create(nb, loc, kb, col);
                  Value visible = arith::CmpIOp::create(
                      nb, loc, arith::CmpIPredicate::slt, key, numKeys);
                  if (causalOffset)
                    visible = arith::AndIOp::create(
                        nb, loc, visible,
                        buildCausalVisible(nb, loc, key, row, causalOffset));
                  return arith::SelectOp::create(nb, loc, visible, a[0],
                                                 f32Const(nb, kNegInf));
                });

  // Every update below writes into the buffer of the value it replaces, so
  // that bufferization keeps (m, l, acc) in place across iterations.
  Value rowMax =
      generic(scores, filled({tileRows}, kNegInf), {ij, i}, {par, red},
              [&](OpBuilder &nb, ValueRange a) -> Value {
                return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
              });
  // P = exp(S - m'); m' is recomputed elementwise so that m is overwritten
  // only once, after its last use.
  auto newMax = [&](OpBuilder &nb, Value m, Value blockMax) {
    return buildSoftmaxShift(nb, loc,
                             arith::MaximumFOp::create(nb, loc, m, blockMax));
  };
  Value probs = generic({s.m, rowMax}, scores, {i, i, ij}, {par, par},
                        [&](OpBuilder &nb, ValueRange a) -> Value {
                          Value d = arith::SubFOp::create(
                              nb, loc, a[2], newMax(nb, a[0], a[1]));
                          return math::ExpOp::create(nb, loc, d);
                        });
  // alpha = exp(m - m'), the rescaling of what was accumulated so far.
  Value alpha = generic({s.m, rowMax}, empty({tileRows}, f32), {i1, i1, i1},
                        {par}, [&](OpBuilder &nb, ValueRange a) -> Value {
                          Value d = arith::SubFOp::create(
                              nb, loc, a[0], newMax(nb, a[0], a[1]));
                          return math::ExpOp::create(nb, loc, d);
                        });
  Value mOut = generic(rowMax, s.m, {i1, i1}, {par},
                       [&](OpBuilder &nb, ValueRange a) -> Value {
                         return arith::MaximumFOp::create(nb, loc, a[1], a[0]);
                       });
  // l' = alpha l + rowsum P
  Value lScaled = generic(alpha, s.l, {i1, i1}, {par},
                          [&](OpBuilder &nb, ValueRange a) -> Value {
                            return arith::MulFOp::create(nb, loc, a[1], a[0]);
                          });
  Value lNew = generic(probs, lScaled, {ij, i}, {par, red},
                       [&](OpBuilder &nb, ValueRange a) -> Value {
                         return arith::AddFOp::create(nb, loc, a[0], a[1]);
                       });
  // acc' = alpha acc + P V_blk
  Value accScaled = generic(alpha, s.acc, {i, ij}, {par, par},
                            [&](OpBuilder &nb, ValueRange a) -> Value {
                              return arith::MulFOp::create(nb, loc, a[1], a[0]);
                            });
  Value accNew =
      generic({probs, v}, accScaled,
              {map(3, {d0, d2}), map(3, {d2, d1}), map(3, {d0, d1})},
              {par, par, red}, [&](OpBuilder &nb, ValueRange a) -> Value {
                Value prod =
                    arith::MulFOp::create(nb, loc, a[0], toF32(nb, a[1]));
                return arith::AddFOp::create(nb, loc, a[2], prod);
              });
  return {mOut, lNew, accNew};
}

Value OnlineSoftmaxBuilder::epilogue(State s, Value gate) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  auto par = IteratorType::parallel;
  AffineMap i1 = map(1, {d0}), ij = map(2, {d0, d1}), i = map(2, {d0});
  // 1 / l, or 0 for a row that saw no key (its acc is 0 as well).
  Value inv = generic(s.l, empty({tileRows}, f32), {i1, i1}, {par},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        return buildInverseRowSum(nb, loc, a[0]);
                      });
  Value init =
      empty({tileRows, b.getIndexAttr(op.getValueHeadDim())}, elementType);
  SmallVector<Value> inputs = {s.acc, inv};
  SmallVector<AffineMap> maps = {ij, i};
  if (gate) {
    inputs.push_back(gate);
    maps.push_back(
        op.isGateHeadwise() ? map(2, {d0, getAffineConstantExpr(0, ctx)}) : ij);
  }
  maps.push_back(ij);
  return generic(inputs, init, maps, {par, par},
                 [&](OpBuilder &nb, ValueRange a) -> Value {
                   Value y = arith::MulFOp::create(nb, loc, a[0], a[1]);
                   Value g = gate ? toF32(nb, a[2]) : Value();
                   return buildGatedOutput(nb, loc, y, g, op.getGate(),
                                           op.getCombine(), elementType);
                 });
}

Value OnlineSoftmaxBuilder::buildGroup(Value batch, Value firstHead) {
  Value kvHead =
      arith::DivUIOp::create(b, loc, firstHead, index(op.getGroupSize()));
  Value q = queryTile(batch, firstHead);

  OpFoldResult bk = b.getIndexAttr(keyBlock);
  OpFoldResult dv = b.getIndexAttr(op.getValueHeadDim());
  State state{filled({tileRows}, kNegInf), filled({tileRows}, 0.0),
              filled({tileRows, dv}, 0.0)};

  // Keys [0, unmasked) are visible to every row of the tile in whole blocks:
  // without causal, all full blocks; with causal, the full blocks up to what
  // row 0 sees (j <= offset).
  Value visibleToAll = numKeys;
  if (causalOffset) {
    Value seen = buildCausalKeyBound(b, loc, index(0), causalOffset);
    seen = arith::MaxSIOp::create(b, loc, seen, index(0));
    visibleToAll = arith::MinSIOp::create(b, loc, seen, numKeys);
  }
  Value unmasked = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, visibleToAll, index(keyBlock)),
      index(keyBlock));

  auto keyLoop = [&](Value lb, Value ub, bool masked) {
    auto loop = forLoop(
        lb, ub, index(keyBlock), {state.m, state.l, state.acc},
        [&](Value kb, ValueRange iter) -> SmallVector<Value> {
          // A masked block may be the last, partial one: pad it.
          OpFoldResult cols = bk;
          if (masked) {
            AffineExpr k0, n;
            bindDims(b.getContext(), k0, n);
            cols = affine::makeComposedFoldedAffineMin(
                b, loc,
                AffineMap::get(
                    2, 0,
                    {getAffineConstantExpr(keyBlock, b.getContext()), n - k0},
                    b.getContext()),
                {kb, numKeys});
          }
          Value k = tile(op.getKey(), batch, kvHead, kb, cols, bk);
          Value v = tile(op.getValue(), batch, kvHead, kb, cols, bk);
          State next =
              keyBlockStep(q, k, v, {iter[0], iter[1], iter[2]}, kb, masked);
          return {next.m, next.l, next.acc};
        });
    state = {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
  };
  keyLoop(index(0), unmasked, /*masked=*/false);
  keyLoop(unmasked, numKeys, /*masked=*/true);

  Value gate = op.hasGate() ? stackedTile(op.getGateInput(), batch, firstHead,
                                          /*shared=*/op.isGateShared())
                            : Value();
  return epilogue(state, gate);
}

Value OnlineSoftmaxBuilder::build() {
  Value query = op.getQuery();
  rows = tensor::getMixedSize(b, loc, query, 2);
  rowsTile = rows;
  // Pad the query tile to a static row count when one bounds the rows (the
  // tiles made by gated-attention-tile have min(Bq, Sq - q0) rows).
  if (!getConstantIntValue(rows)) {
    FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
        presburger::BoundType::UB, {query, 2}, /*stopCondition=*/nullptr,
        /*closedUB=*/true);
    if (succeeded(bound))
      rowsTile = b.getIndexAttr(*bound);
  }
  // All query heads of a GQA group share one query tile (FlashAttention-3's
  // "pack GQA"), so each key/value block is read and packed once per group.
  tileRows = rowsTile;
  if (std::optional<int64_t> headRows = getConstantIntValue(rowsTile)) {
    stack = op.getGroupSize();
    tileRows = b.getIndexAttr(stack * *headRows);
  }
  numKeys = tensor::DimOp::create(b, loc, op.getKey(), 2);
  if (op.getCausal())
    causalOffset = buildCausalOffset(
        b, loc, numKeys, getValueOrCreateConstantIndexOp(b, loc, rows));

  // Batches and head groups: loops that canonicalization removes when they
  // run once.
  Value result = tensor::EmptyOp::create(
      b, loc,
      SmallVector<OpFoldResult>{tensor::getMixedSize(b, loc, query, 0),
                                b.getIndexAttr(op.getNumQueryHeads()), rows,
                                b.getIndexAttr(op.getValueHeadDim())},
      elementType);
  Value numBatches = tensor::DimOp::create(b, loc, query, 0);
  auto batchLoop = forLoop(
      index(0), numBatches, index(1), result,
      [&](Value batch, ValueRange batchIter) -> SmallVector<Value> {
        auto headLoop = forLoop(
            index(0), index(op.getNumQueryHeads()), index(stack), batchIter,
            [&](Value firstHead, ValueRange headIter) -> SmallVector<Value> {
              Value out = buildGroup(batch, firstHead);
              // Head r of the group: rows [r * rowsTile, + rows) of the tile.
              OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
              OpFoldResult dv = b.getIndexAttr(op.getValueHeadDim());
              Value result = headIter[0];
              for (int64_t r = 0; r < stack; ++r) {
                Value headOut = out;
                if (stack > 1 || rows != rowsTile) {
                  OpFoldResult first =
                      stack > 1
                          ? b.getIndexAttr(r * *getConstantIntValue(rowsTile))
                          : zero;
                  SmallVector<OpFoldResult> offsets = {first, zero};
                  SmallVector<OpFoldResult> sizes = {rows, dv};
                  SmallVector<OpFoldResult> strides(2, one);
                  headOut = tensor::ExtractSliceOp::create(b, loc, out, offsets,
                                                           sizes, strides);
                }
                Value head = arith::AddIOp::create(b, loc, firstHead, index(r));
                SmallVector<OpFoldResult> offsets = {batch, head, zero, zero};
                SmallVector<OpFoldResult> sizes = {one, one, rows, dv};
                SmallVector<OpFoldResult> strides(4, one);
                result = tensor::InsertSliceOp::create(b, loc, headOut, result,
                                                       offsets, sizes, strides);
              }
              return {result};
            });
        return {headLoop.getResult(0)};
      });
  Value res = batchLoop.getResult(0);
  if (res.getType() != op.getResultType())
    res = tensor::CastOp::create(b, loc, op.getResultType(), res);
  return res;
}

FailureOr<Value> mlir::gated_attention::decomposeToOnlineSoftmax(
    RewriterBase &rewriter, AttentionOp op,
    const OnlineSoftmaxOptions &options) {
  if (options.keyBlock <= 0 || options.queryBlock <= 0)
    return rewriter.notifyMatchFailure(op, "block sizes must be positive");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Value result = OnlineSoftmaxBuilder(rewriter, op, options).build();
  rewriter.replaceOp(op, result);
  return result;
}

namespace {
struct OnlineSoftmaxPattern : OpRewritePattern<AttentionOp> {
  OnlineSoftmaxPattern(MLIRContext *ctx, const OnlineSoftmaxOptions &options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    return decomposeToOnlineSoftmax(rewriter, op, options);
  }

  OnlineSoftmaxOptions options;
};
} // namespace

void mlir::gated_attention::populateGatedAttentionOnlineSoftmaxPatterns(
    RewritePatternSet &patterns, const OnlineSoftmaxOptions &options) {
  patterns.add<OnlineSoftmaxPattern>(patterns.getContext(), options);
}
