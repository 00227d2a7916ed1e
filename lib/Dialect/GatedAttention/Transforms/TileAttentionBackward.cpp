//===- TileAttentionBackward.cpp - the gated-attention-tile-backward pass -===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The FlashAttention-2-shaped CPU backward: the passes of BackwardTile.h
// (preprocessing; key blocks for dK, dV and partial dQ; the sum of the
// partials) and the sum of a shared gate's gradient over the heads.
//
//===----------------------------------------------------------------------===//

#include "BackwardTile.h"
#include "MatrixUnits.h"

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
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
  // dY (rounded to bf16 where the products take bf16 operands), L where
  // it is recomputed (a given L is read where it is), D, and the gate's
  // gradient: f32 per head for a shared gate (summed over the heads
  // afterwards), else rounded here into the result, which bufferization
  // then places in the caller's buffer.
  SmallVector<Value> outputs = {
      newTensor({rowsB, hq, rowsS, b.getIndexAttr(dv)},
                pairOperands ? elementType : f32)};
  if (!lseIn)
    outputs.push_back(newTensor({rowsB, hq, rowsS}, f32));
  unsigned deltaOut = outputs.size(), gateOut = deltaOut + 1;
  outputs.push_back(newTensor({rowsB, hq, rowsS}, f32));
  if (gated && shared)
    outputs.push_back(newTensor(
        {rowsB, hq, rowsS, b.getIndexAttr(op.getGateType().getDimSize(3))},
        f32));
  else if (gated)
    outputs.push_back(resultTensor(
        tensor::getMixedSizes(b, loc, op.getGateInput()), elementType));
  // Whole blocks read views of their rows; only the partial one is padded.
  SmallVector<Value> results = blockForall(
      heads, numRows, bq, outputs,
      [&](Value bi, Value h, Value row0,
          OpFoldResult rows) -> SmallVector<TileWrite> {
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
        Value rowCount = getValueOrCreateConstantIndexOp(b, loc, rows);
        lse = lseIn ? rowsOf(lseIn, bi, h, row0, rows, bq, false)
                    : recomputeLse(q, bi, kvHead, row0, rowCount);
        if (needY)
          y = recomputeOutput(q, lse, bi, kvHead, row0, rowCount);

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
        // (D from the f32 dY: only the products read it rounded.)
        SmallVector<TileWrite> writes = {
            {pairOperands ? rounded(dy) : dy, 0, bi, h, row0, rows},
            {delta, deltaOut, bi, h, row0, rows}};
        if (!lseIn)
          writes.push_back({lse, 1, bi, h, row0, rows});
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
          writes.push_back(
              {shared ? grad : rounded(grad), gateOut, bi, h, row0, rows});
        }
        return writes;
      });
  Rows rowsOut{results[0], lseIn ? lseIn : results[1], results[deltaOut],
               Value()};
  if (gated)
    rowsOut.gateGrad = results[gateOut];
  return rowsOut;
}

/// The iterations the fused key-block pass aims at, (batch, K/V head,
/// split) together, and the most splits it takes: each split costs an f32
/// copy of dQ. Fixed numbers rather than the thread count, so that dQ is
/// the same bits on any machine.
static constexpr int64_t kTargetIterations = 16, kMaxSplits = 4;

Value BackwardTileBuilder::keySplits() {
  Value keyBlocks = b.createOrFold<arith::CeilDivUIOp>(loc, numKeys, index(bk));
  Value heads = b.createOrFold<arith::MulIOp>(
      loc, b.createOrFold<arith::MaxSIOp>(loc, batch, index(1)),
      index(op.getNumKVHeads()));
  Value wanted =
      b.createOrFold<arith::CeilDivUIOp>(loc, index(kTargetIterations), heads);
  Value splits = b.createOrFold<arith::MinSIOp>(loc, wanted, index(kMaxSplits));
  splits = b.createOrFold<arith::MinSIOp>(loc, splits, keyBlocks);
  return b.createOrFold<arith::MaxSIOp>(loc, splits, index(1));
}

SmallVector<Value> BackwardTileBuilder::keyBlockGrads(const Rows &rowsIn) {
  AffineExpr d0, d1, d2;
  bindDims(b.getContext(), d0, d1, d2);
  Value key = op.getKey(), value = op.getValue(), query = op.getQuery();
  int64_t kvHeads = op.getNumKVHeads(), heads = op.getNumQueryHeads();
  // Each split accumulates its contributions to dQ in a partial dQ of its
  // own. Without the causal mask every key block costs the same, so split s
  // takes the contiguous blocks [s n / splits, (s + 1) n / splits) and
  // writes their dK and dV rows where they lie in the results. Under the
  // mask the blocks near the diagonal cost less, so split s takes blocks
  // s, s + splits, ... (every split sees rows of the diagonal and below)
  // and stages each block's dK and dV rows at its block index / splits.
  Value splits = keySplits();
  Value keyBlocks = b.createOrFold<arith::CeilDivUIOp>(loc, numKeys, index(bk));
  Value slots = b.createOrFold<arith::MulIOp>(loc, batch, splits);
  OpFoldResult rowsS = tensor::getMixedSize(b, loc, query, 2);
  SmallVector<Value> outputs = {
      newTensor({slots, b.getIndexAttr(heads), rowsS, b.getIndexAttr(d)}, f32)};
  Value stagedRows;
  if (causal) {
    stagedRows = b.createOrFold<arith::MulIOp>(
        loc, b.createOrFold<arith::CeilDivUIOp>(loc, keyBlocks, splits),
        index(bk));
    outputs.push_back(newTensor(
        {slots, b.getIndexAttr(kvHeads), stagedRows, b.getIndexAttr(d)},
        elementType));
    outputs.push_back(newTensor(
        {slots, b.getIndexAttr(kvHeads), stagedRows, b.getIndexAttr(dv)},
        elementType));
  } else {
    outputs.push_back(
        resultTensor(tensor::getMixedSizes(b, loc, key), elementType));
    outputs.push_back(
        resultTensor(tensor::getMixedSizes(b, loc, value), elementType));
  }
  auto loop = scf::ForallOp::create(
      b, loc, getAsOpFoldResult({batch, index(kvHeads), splits}), outputs,
      std::nullopt);
  markOnlineSoftmaxLoop(loop);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> ivs = loop.getInductionVars();
    Value bi = ivs[0], kvHead = ivs[1], split = ivs[2];
    Value slot = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, bi, splits), split);
    Value firstHead = arith::MulIOp::create(b, loc, kvHead, index(group));
    // The iteration's regions of the shared outputs, as [1, H, S, W].
    auto region =
        [&](Value dest, Value head, int64_t numHeads,
            OpFoldResult rows) -> std::pair<Value, SmallVector<OpFoldResult>> {
      auto type = cast<RankedTensorType>(dest.getType());
      SmallVector<OpFoldResult> offsets = {slot, head, b.getIndexAttr(0),
                                           b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                         b.getIndexAttr(numHeads), rows,
                                         b.getIndexAttr(type.getDimSize(3))};
      SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
      // (Static rows, of static Sq or Skv, give a static slice.)
      auto sliceType = tensor::ExtractSliceOp::inferResultType(type, sizes);
      return {tensor::ExtractSliceOp::create(b, loc, sliceType, dest, offsets,
                                             sizes, strides),
              sizes};
    };
    ValueRange shared = loop.getRegionIterArgs();
    auto [partial, partialSizes] = region(shared[0], firstHead, group, rowsS);
    Value zero = index(0);
    // The split's key blocks: [firstKey, endKey) by `stride`; its rows of
    // dK and dV (staged, or the results' rows [firstKey, endKey)).
    Value firstKey, endKey, stride;
    SmallVector<OpFoldResult> kvOffsets;
    OpFoldResult kvRows;
    if (causal) {
      stride = arith::MulIOp::create(b, loc, splits, index(bk));
      firstKey = arith::MulIOp::create(b, loc, split, index(bk));
      endKey = numKeys;
      kvOffsets = {slot, kvHead, b.getIndexAttr(0), b.getIndexAttr(0)};
      kvRows = getAsOpFoldResult(stagedRows);
    } else {
      auto blockStart = [&](Value s) {
        Value block = arith::DivUIOp::create(
            b, loc, arith::MulIOp::create(b, loc, s, keyBlocks), splits);
        return arith::MinSIOp::create(
            b, loc, arith::MulIOp::create(b, loc, block, index(bk)), numKeys);
      };
      stride = index(bk);
      firstKey = blockStart(split);
      endKey = blockStart(arith::AddIOp::create(b, loc, split, index(1)));
      kvOffsets = {bi, kvHead, firstKey, b.getIndexAttr(0)};
      kvRows = arith::SubIOp::create(b, loc, endKey, firstKey).getResult();
    }
    auto kvRegion =
        [&](Value dest,
            int64_t width) -> std::pair<Value, SmallVector<OpFoldResult>> {
      auto type = cast<RankedTensorType>(dest.getType());
      SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                         kvRows, b.getIndexAttr(width)};
      SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
      auto sliceType = tensor::ExtractSliceOp::inferResultType(type, sizes);
      return {tensor::ExtractSliceOp::create(b, loc, sliceType, dest, kvOffsets,
                                             sizes, strides),
              sizes};
    };
    auto [stagedK, stagedSizes] = kvRegion(shared[1], d);
    auto [stagedV, stagedVSizes] = kvRegion(shared[2], dv);

    // The partial dQ starts at 0 (every row: a split may see none of some).
    partial =
        forLoop(zero, index(group), index(1), partial,
                [&](Value r, ValueRange acc) {
                  return blockLoop(
                      zero, numRows, bq, numRows, acc,
                      [&](Value row0, OpFoldResult rows, ValueRange acc) {
                        // Filled where it is (whole blocks: a view).
                        Value zeros =
                            linalg::FillOp::create(
                                b, loc, f32Const(b, 0.0),
                                rowsOf(acc[0], zero, r, row0, rows, bq, false))
                                .getResult(0);
                        return SmallVector<Value>{
                            putRows(acc[0], zeros, zero, r, row0, rows)};
                      });
                })
            .front();

    SmallVector<Value> state = forLoop(
        firstKey, endKey, stride, {partial, stagedK, stagedV},
        [&](Value key0, ValueRange iter) -> SmallVector<Value> {
          Value cols = keysFrom(key0);
          // K and V in f32 once per key block, or as stored for the pair
          // products. The block works key-major (Sᵀ = K Qᵀ, Pᵀ,
          // dPᵀ = V dYᵀ, dSᵀ): the products into dK and dV then read their
          // left operands along rows.
          Value k = rowsOf(key, bi, kvHead, key0, cols, bk, !pairOperands);
          Value v = rowsOf(value, bi, kvHead, key0, cols, bk, !pairOperands);
          Value start = firstRow(key0);
          SmallVector<Value> accs = forLoop(
              zero, index(group), index(1),
              {filled({bk, d}, 0.0), filled({bk, dv}, 0.0), iter[0]},
              [&](Value r, ValueRange acc) -> SmallVector<Value> {
                Value h = arith::AddIOp::create(b, loc, firstHead, r);
                return blockLoop(
                    start, numRows, bq, numRows, acc,
                    [&](Value row0, OpFoldResult rows,
                        ValueRange acc) -> SmallVector<Value> {
                      // bf16 Q as stored for Sᵀ = K Qᵀ, whose operands are
                      // both inputs: they multiply exactly in pairs on the
                      // matrix units (vdpbf16ps, VectorizeTiles), twice the
                      // FMAs' rate. In f32 for dK += dSᵀ Q unless the
                      // products take bf16 operands (pairOperands: dS
                      // rounded, as torch's and the GPU kernels' are), and
                      // for S in f16, which has no pairs.
                      Value qIn =
                          elementType.isBF16()
                              ? rowsOf(query, bi, h, row0, rows, bq, false)
                              : Value();
                      Value q = pairOperands ? qIn
                                             : rowsOf(query, bi, h, row0, rows,
                                                      bq, true);
                      if (!qIn)
                        qIn = q;
                      Value dy =
                          rowsOf(rowsIn.dy, bi, h, row0, rows, bq, false);
                      Value lse =
                          rowsOf(rowsIn.lse, bi, h, row0, rows, bq, false);
                      Value delta =
                          rowsOf(rowsIn.delta, bi, h, row0, rows, bq, false);
                      AffineMap rowsK = map(3, {d0, d2}),
                                colsK = map(3, {d1, d2}), kn = map(3, {d2, d1});
                      Value scores =
                          contract(k, rowsK, qIn, colsK, filled({bk, bq}, 0.0));
                      Value p = weights(scores, lse, row0, key0, true);
                      Value dp =
                          contract(v, rowsK, dy, colsK, filled({bk, bq}, 0.0));
                      // (P is rounded to bf16 by the pair product of dV.)
                      Value ds = scoreGrads(p, dp, delta, true,
                                            pairOperands ? elementType : f32);
                      // dQ += dS K into the split's partial rows: dSᵀ read
                      // down its columns, the outer product's natural
                      // operand, or transposed into the rows of bf16 pairs.
                      Value dq = rowsOf(acc[2], zero, r, row0, rows, bq, false);
                      dq = pairOperands
                               ? contract(transposed(ds), rowsK, k, kn, dq)
                               : contract(ds, map(3, {d2, d0}), k, kn, dq);
                      // dK += dSᵀ Q, dV += Pᵀ dY.
                      return {contract(ds, rowsK, q, kn, acc[0]),
                              contract(p, rowsK, dy, kn, acc[1]),
                              putRows(acc[2], dq, zero, r, row0, rows)};
                    });
              });
          // The block's rows in the split's region of dK and dV: staged at
          // block index / splits, or where they lie (the last block may be
          // partial).
          Value staged;
          OpFoldResult block = b.getIndexAttr(bk);
          if (causal) {
            staged = arith::MulIOp::create(
                b, loc,
                arith::DivUIOp::create(
                    b, loc, arith::DivUIOp::create(b, loc, key0, index(bk)),
                    splits),
                index(bk));
          } else {
            staged = arith::SubIOp::create(b, loc, key0, firstKey);
            block = getAsOpFoldResult(cols);
          }
          return {
              accs[2],
              putRows(iter[1], rounded(accs[0]), zero, zero, staged, block),
              putRows(iter[2], rounded(accs[1]), zero, zero, staged, block)};
        });
    b.setInsertionPointToStart(loop.getTerminator().getBody());
    SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
    SmallVector<SmallVector<OpFoldResult>> offsets = {
        {slot, firstHead, b.getIndexAttr(0), b.getIndexAttr(0)},
        kvOffsets,
        kvOffsets};
    SmallVector<SmallVector<OpFoldResult>> sizes = {partialSizes, stagedSizes,
                                                    stagedVSizes};
    for (unsigned i = 0; i < 3; ++i)
      tensor::ParallelInsertSliceOp::create(b, loc, state[i], shared[i],
                                            offsets[i], sizes[i], strides);
  }
  if (!causal)
    return {sumQueryGrads(loop.getResult(0), splits), loop.getResult(1),
            loop.getResult(2)};
  return {sumQueryGrads(loop.getResult(0), splits),
          unstageKeyBlocks(loop.getResult(1), splits, key),
          unstageKeyBlocks(loop.getResult(2), splits, value)};
}

Value BackwardTileBuilder::sumQueryGrads(Value partial, Value splits) {
  Value query = op.getQuery();
  Value output =
      resultTensor(tensor::getMixedSizes(b, loc, query), elementType);
  return blockForall(
             op.getNumQueryHeads(), numRows, bq, output,
             [&](Value bi, Value h, Value row0,
                 OpFoldResult rows) -> SmallVector<TileWrite> {
               // In split order: the same sum on any thread count.
               Value first = arith::MulIOp::create(b, loc, bi, splits);
               Value sum =
                   forLoop(index(0), splits, index(1), filled({bq, d}, 0.0),
                           [&](Value s, ValueRange acc) -> SmallVector<Value> {
                             Value slot =
                                 arith::AddIOp::create(b, loc, first, s);
                             Value part = rowsOf(partial, slot, h, row0, rows,
                                                 bq, false);
                             AffineMap id = b.getMultiDimIdentityMap(2);
                             return {generic(
                                 {part, acc[0]},
                                 tensor::EmptyOp::create(b, loc, {bq, d}, f32),
                                 {id, id, id},
                                 [&](OpBuilder &nb, ValueRange a) -> Value {
                                   return arith::AddFOp::create(nb, loc, a[1],
                                                                a[0]);
                                 })};
                           })
                       .front();
               return {{rounded(sum), 0, bi, h, row0, rows}};
             })
      .front();
}

Value BackwardTileBuilder::unstageKeyBlocks(Value staged, Value splits,
                                            Value like) {
  Value output = resultTensor(tensor::getMixedSizes(b, loc, like), elementType);
  return blockForall(op.getNumKVHeads(), numKeys, bk, output,
                     [&](Value bi, Value kvHead, Value key0,
                         OpFoldResult cols) -> SmallVector<TileWrite> {
                       // Key block j was staged by split j % splits at j /
                       // splits.
                       Value j =
                           arith::DivUIOp::create(b, loc, key0, index(bk));
                       Value slot = arith::AddIOp::create(
                           b, loc, arith::MulIOp::create(b, loc, bi, splits),
                           arith::RemUIOp::create(b, loc, j, splits));
                       Value row = arith::MulIOp::create(
                           b, loc, arith::DivUIOp::create(b, loc, j, splits),
                           index(bk));
                       Value tile = rowsOf(staged, slot, kvHead, row,
                                           b.getIndexAttr(bk), bk, false);
                       return {{tile, 0, bi, kvHead, key0, cols}};
                     })
      .front();
}

Value BackwardTileBuilder::gateGrad(Value perHead) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  Value gate = op.getGateInput();
  RankedTensorType gateType = op.getGateType();
  Type element = elementType;
  auto round = [&](OpBuilder &nb, ValueRange a) -> Value {
    return element == f32 ? a[0]
                          : arith::TruncFOp::create(nb, loc, element, a[0]);
  };
  // A per-head gate's gradient is the preprocessing's, rounded there.
  if (!op.isGateShared())
    return castTo(perHead, gateType);
  // A shared gate serves every head: its gradient sums over them.
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, gate, 0),
                                     tensor::getMixedSize(b, loc, gate, 2),
                                     b.getIndexAttr(gateType.getDimSize(3))};
  Value zero =
      linalg::FillOp::create(b, loc, f32Const(b, 0.0), newTensor(sizes, f32))
          .getResult(0);
  Value sum =
      generic(perHead, zero, {map(4, {d0, d1, d2, d3}), map(4, {d0, d2, d3})},
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
  SmallVector<Value> grads = keyBlockGrads(rows);
  Value dq = grads[0], dk = grads[1], dv = grads[2];
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
    if (queryBlock < 0 || keyBlock < 0) {
      getOperation()->emitError(
          "query-block and key-block must be positive, or 0 (64)");
      return signalPassFailure();
    }
    // The forward's auto blocks (chooseBlocks) were measured on the forward
    // only: the backward keeps 64 x 64.
    int64_t rows = queryBlock ? queryBlock : kSmallBlock;
    int64_t keys = keyBlock ? keyBlock : kSmallBlock;
    std::optional<MatrixUnits> units = parseMatrixUnits(matrixUnits);
    if (!units) {
      getOperation()->emitError()
          << "option 'matrix-units': unknown value '" << matrixUnits
          << "'; expected fma, avx512-bf16 or amx";
      return signalPassFailure();
    }
    SmallVector<AttentionBackwardOp> ops;
    getOperation()->walk([&](AttentionBackwardOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionBackwardOp op : ops) {
      // The passes round to and accumulate in f32 (BackwardTile.h).
      if (needsWideAccumulator(op.getQueryType().getElementType())) {
        op->emitError("the tiled backward accumulates in f32 and does not "
                      "take f64 ops: lower them with "
                      "convert-gated-attention-backward-to-linalg first "
                      "(--gated-attention-to-llvm does)");
        return signalPassFailure();
      }
      SmallVector<Value> results =
          BackwardTileBuilder(rewriter, op, rows, keys,
                              *units != MatrixUnits::FMA)
              .build();
      rewriter.replaceOp(op, results);
    }
  }
};
} // namespace
