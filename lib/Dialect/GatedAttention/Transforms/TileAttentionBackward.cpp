//===- TileAttentionBackward.cpp - the gated-attention-tile-backward pass -===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The FlashAttention-2-shaped CPU backward: the three scf.forall passes of
// BackwardTile.h (preprocessing, key blocks for dK and dV, query blocks for
// dQ) and the sum of a shared gate's gradient over the heads.
//
//===----------------------------------------------------------------------===//

#include "BackwardTile.h"

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONTILEBACKWARDPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

BackwardTileBuilder::Rows BackwardTileBuilder::preprocess() {
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  AffineMap ij = map(2, {d0, d1}), i = map(2, {d0});
  bool gated = op.hasGate(), shared = op.isGateShared(),
       headwise = op.isGateHeadwise();
  CombineKind combine = op.getCombine();
  bool needY = backwardRecomputesOutput(
      gated ? Attribute(op.getGate()) : Attribute(), combine);
  Value lseIn = op.getLse();
  int64_t heads = op.getNumQueryHeads();
  OpFoldResult hq = b.getIndexAttr(heads);
  // Sizes as static as the query's: a static size given as a value would
  // become a tensor.cast of the output, which canonicalization folds into a
  // new scf.forall without the VectorizeTiles mark.
  OpFoldResult rowsB = tensor::getMixedSize(b, loc, op.getQuery(), 0),
               rowsS = tensor::getMixedSize(b, loc, op.getQuery(), 2);
  SmallVector<Value> outputs = {
      newTensor({rowsB, hq, rowsS, b.getIndexAttr(dv)}, f32),
      newTensor({rowsB, hq, rowsS}, f32), newTensor({rowsB, hq, rowsS}, f32)};
  if (gated)
    outputs.push_back(newTensor(
        {rowsB, hq, rowsS, b.getIndexAttr(op.getGateType().getDimSize(3))},
        f32));
  Value blocks = arith::CeilDivUIOp::create(b, loc, numRows, index(bq));

  SmallVector<Value> results = forall(
      {batch, index(heads), blocks}, outputs,
      [&](ValueRange ivs) -> SmallVector<TileWrite> {
        Value bi = ivs[0], h = ivs[1];
        Value row0 = arith::MulIOp::create(b, loc, ivs[2], index(bq));
        Value rows = rowsFrom(row0);
        Value kvHead = arith::DivUIOp::create(b, loc, h, index(group));
        Value dout = rowsOf(op.getOutputGrad(), bi, h, row0, rows, bq, true);
        Value out = rowsOf(op.getOutput(), bi, h, row0, rows, bq, true);
        Value g;
        if (gated)
          g = rowsOf(op.getGateInput(), bi, shared ? index(0) : h, row0, rows,
                     bq, true, /*flat=*/headwise);
        Value q, lse, y;
        if (!lseIn || needY)
          q = rowsOf(op.getQuery(), bi, h, row0, rows, bq, true);
        lse = lseIn ? rowsOf(lseIn, bi, h, row0, rows, bq, false)
                    : recomputeLse(q, bi, kvHead, row0, rows);
        if (needY)
          y = recomputeOutput(q, lse, bi, kvHead, row0, rows);

        AffineMap gateMap = headwise ? i : ij;
        SmallVector<Value> dyIns = {dout};
        SmallVector<AffineMap> dyMaps = {ij};
        if (gated) {
          dyIns.push_back(g);
          dyMaps.push_back(gateMap);
        }
        dyMaps.push_back(ij);
        GateFunctionAttrInterface activation = op.getGate();
        Value dy = generic(
            dyIns, tensor::EmptyOp::create(b, loc, {bq, dv}, f32), dyMaps,
            [&](OpBuilder &nb, ValueRange a) {
              Value act;
              if (gated)
                act = activation.buildActivation(nb, loc, a[1]);
              return buildAttentionOutputGrad(nb, loc, combine, a[0], act);
            });
        // D = rowsum(dY * Y), or rowsum(dOut * out) (AttentionBackwardMath).
        Value delta =
            generic({y ? dy : dout, y ? y : out}, filled({bq}, 0.0),
                    {ij, ij, i}, [&](OpBuilder &nb, ValueRange a) -> Value {
                      Value prod = arith::MulFOp::create(nb, loc, a[0], a[1]);
                      return arith::AddFOp::create(nb, loc, a[2], prod);
                    });
        SmallVector<TileWrite> writes = {{dy, 0, bi, h, row0, rows},
                                         {lse, 1, bi, h, row0, rows},
                                         {delta, 2, bi, h, row0, rows}};
        if (gated) {
          // Per head, summed over Dv for a headwise gate.
          auto derivative = cast<GateDerivativeAttrInterface>(op.getGate());
          Value grad =
              generic({dout, g, y ? y : out},
                      filled(headwise ? SmallVector<int64_t>{bq}
                                      : SmallVector<int64_t>{bq, dv},
                             0.0),
                      {ij, gateMap, ij, gateMap},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        Value elem = buildGateGrad(
                            nb, loc, derivative, combine, a[1], a[0],
                            y ? a[2] : Value(), y ? Value() : a[2]);
                        return arith::AddFOp::create(nb, loc, a[3], elem);
                      });
          writes.push_back({grad, 3, bi, h, row0, rows});
        }
        return writes;
      });
  Rows rowsOut{results[0], results[1], results[2], Value()};
  if (gated)
    rowsOut.gateGrad = results[3];
  return rowsOut;
}

std::pair<Value, Value>
BackwardTileBuilder::keyAndValueGrads(const Rows &rowsIn) {
  AffineExpr d0, d1, d2;
  bindDims(b.getContext(), d0, d1, d2);
  Value key = op.getKey(), value = op.getValue();
  int64_t kvHeads = op.getNumKVHeads();
  SmallVector<Value> outputs = {
      newTensor(tensor::getMixedSizes(b, loc, key), elementType),
      newTensor(tensor::getMixedSizes(b, loc, value), elementType)};
  Value blocks = arith::CeilDivUIOp::create(b, loc, numKeys, index(bk));
  SmallVector<Value> results = forall(
      {batch, index(kvHeads), blocks}, outputs,
      [&](ValueRange ivs) -> SmallVector<TileWrite> {
        Value bi = ivs[0], kvHead = ivs[1];
        Value key0 = arith::MulIOp::create(b, loc, ivs[2], index(bk));
        Value cols = keysFrom(key0);
        // K and V in f32 once per key block. The block works key-major
        // (Sᵀ = K Qᵀ, Pᵀ, dPᵀ = V dYᵀ, dSᵀ): the products into dK and dV
        // then read their left operands along rows.
        Value k = rowsOf(key, bi, kvHead, key0, cols, bk, true);
        Value v = rowsOf(value, bi, kvHead, key0, cols, bk, true);
        Value start = firstRow(key0);
        SmallVector<Value> accs = forLoop(
            index(0), index(group), index(1),
            {filled({bk, d}, 0.0), filled({bk, dv}, 0.0)},
            [&](Value r, ValueRange acc) -> SmallVector<Value> {
              Value h = arith::AddIOp::create(
                  b, loc, arith::MulIOp::create(b, loc, kvHead, index(group)),
                  r);
              return blockLoop(
                  start, numRows, bq, numRows, acc,
                  [&](Value row0, OpFoldResult rows,
                      ValueRange acc) -> SmallVector<Value> {
                    Value q =
                        rowsOf(op.getQuery(), bi, h, row0, rows, bq, true);
                    Value dy = rowsOf(rowsIn.dy, bi, h, row0, rows, bq, false);
                    Value lse =
                        rowsOf(rowsIn.lse, bi, h, row0, rows, bq, false);
                    Value delta =
                        rowsOf(rowsIn.delta, bi, h, row0, rows, bq, false);
                    AffineMap rowsK = map(3, {d0, d2}),
                              colsK = map(3, {d1, d2});
                    Value scores =
                        contract(k, rowsK, q, colsK, filled({bk, bq}, 0.0));
                    Value p = weights(scores, lse, row0, key0, true);
                    Value dp =
                        contract(v, rowsK, dy, colsK, filled({bk, bq}, 0.0));
                    Value ds = scoreGrads(p, dp, delta, true);
                    // dK += dSᵀ Q, dV += Pᵀ dY.
                    AffineMap kn = map(3, {d2, d1});
                    return {contract(ds, rowsK, q, kn, acc[0]),
                            contract(p, rowsK, dy, kn, acc[1])};
                  });
            });
        return {{rounded(accs[0]), 0, bi, kvHead, key0, cols},
                {rounded(accs[1]), 1, bi, kvHead, key0, cols}};
      });
  return {results[0], results[1]};
}

Value BackwardTileBuilder::queryGrad(const Rows &rowsIn) {
  AffineExpr d0, d1, d2;
  bindDims(b.getContext(), d0, d1, d2);
  Value query = op.getQuery();
  Value output = newTensor(tensor::getMixedSizes(b, loc, query), elementType);
  int64_t heads = op.getNumQueryHeads();
  Value blocks = arith::CeilDivUIOp::create(b, loc, numRows, index(bq));
  return forall(
             {batch, index(heads), blocks}, output,
             [&](ValueRange ivs) -> SmallVector<TileWrite> {
               Value bi = ivs[0], h = ivs[1];
               Value row0 = arith::MulIOp::create(b, loc, ivs[2], index(bq));
               Value rows = rowsFrom(row0);
               Value kvHead = arith::DivUIOp::create(b, loc, h, index(group));
               Value q = rowsOf(query, bi, h, row0, rows, bq, true);
               Value dy = rowsOf(rowsIn.dy, bi, h, row0, rows, bq, false);
               Value lse = rowsOf(rowsIn.lse, bi, h, row0, rows, bq, false);
               Value delta = rowsOf(rowsIn.delta, bi, h, row0, rows, bq, false);
               Value dq =
                   blockLoop(index(0), keyEnd(row0, rows), bk, numKeys,
                             {filled({bq, d}, 0.0)},
                             [&](Value key0, OpFoldResult cols,
                                 ValueRange acc) -> SmallVector<Value> {
                               // K and V widened to f32: every product of the
                               // backward is formed in f32 (its error model),
                               // not by bf16 pair products that round dS and
                               // dY.
                               Value k = rowsOf(op.getKey(), bi, kvHead, key0,
                                                cols, bk, true);
                               Value v = rowsOf(op.getValue(), bi, kvHead, key0,
                                                cols, bk, true);
                               Value scores = contract(q, map(3, {d0, d2}), k,
                                                       map(3, {d1, d2}),
                                                       filled({bq, bk}, 0.0));
                               Value p = weights(scores, lse, row0, key0);
                               Value dp = contract(dy, map(3, {d0, d2}), v,
                                                   map(3, {d1, d2}),
                                                   filled({bq, bk}, 0.0));
                               Value ds = scoreGrads(p, dp, delta);
                               return {contract(ds, map(3, {d0, d2}), k,
                                                map(3, {d2, d1}), acc[0])};
                             })
                       .front();
               return {{rounded(dq), 0, bi, h, row0, rows}};
             })
      .front();
}

Value BackwardTileBuilder::gateGrad(Value perHead) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  Value gate = op.getGateInput();
  RankedTensorType gateType = op.getGateType();
  AffineMap id4 = map(4, {d0, d1, d2, d3});
  Type element = elementType;
  auto round = [&](OpBuilder &nb, ValueRange a) -> Value {
    return element == f32 ? a[0]
                          : arith::TruncFOp::create(nb, loc, element, a[0]);
  };
  if (!op.isGateShared())
    return castTo(
        generic(perHead,
                newTensor(tensor::getMixedSizes(b, loc, gate), elementType),
                {id4, id4}, round),
        gateType);
  // A shared gate serves every head: its gradient sums over them.
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, gate, 0),
                                     tensor::getMixedSize(b, loc, gate, 2),
                                     b.getIndexAttr(gateType.getDimSize(3))};
  Value zero =
      linalg::FillOp::create(b, loc, f32Const(b, 0.0), newTensor(sizes, f32))
          .getResult(0);
  Value sum = generic(perHead, zero, {id4, map(4, {d0, d2, d3})},
                      [&](OpBuilder &nb, ValueRange a) -> Value {
                        return arith::AddFOp::create(nb, loc, a[0], a[1]);
                      });
  AffineMap id3 = map(3, {d0, d1, d2});
  Value result = generic(sum, newTensor(sizes, elementType), {id3, id3}, round);
  auto target = RankedTensorType::get(gateType.getShape(), elementType);
  result = tensor::ExpandShapeOp::create(
      b, loc, target, result, ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}},
      tensor::getMixedSizes(b, loc, gate));
  return castTo(result, gateType);
}

SmallVector<Value> BackwardTileBuilder::build() {
  Rows rows = preprocess();
  auto [dk, dv] = keyAndValueGrads(rows);
  Value dq = queryGrad(rows);
  SmallVector<Value> results = {castTo(dq, op.getResult(0).getType()),
                                castTo(dk, op.getResult(1).getType()),
                                castTo(dv, op.getResult(2).getType())};
  if (op.hasGate())
    results.push_back(
        castTo(gateGrad(rows.gateGrad), op.getResult(3).getType()));
  return results;
}

namespace {
struct GatedAttentionTileBackwardPass
    : gated_attention::impl::GatedAttentionTileBackwardPassBase<
          GatedAttentionTileBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    if (queryBlock <= 0 || keyBlock <= 0) {
      getOperation()->emitError("query-block and key-block must be positive");
      return signalPassFailure();
    }
    SmallVector<AttentionBackwardOp> ops;
    getOperation()->walk([&](AttentionBackwardOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionBackwardOp op : ops) {
      SmallVector<Value> results =
          BackwardTileBuilder(rewriter, op, queryBlock, keyBlock).build();
      rewriter.replaceOp(op, results);
    }
  }
};
} // namespace
