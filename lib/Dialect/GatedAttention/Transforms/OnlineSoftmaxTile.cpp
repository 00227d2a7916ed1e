//===- OnlineSoftmaxTile.cpp - one tile's FlashAttention-2 key loop -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// OnlineSoftmaxTile (OnlineSoftmaxTile.h): the rows of one query tile (the
// heads of a GQA group, stacked), a sequential loop over key blocks
// carrying (m, l, acc), and the gate applied in the epilogue before the
// single store. The dense op's tiles are built in OnlineSoftmax.cpp, the
// paged op's in PagedOnlineSoftmax.cpp. The tile math is upstream linalg on
// tensor tiles, so upstream tiling, vectorization and bufferization apply
// to it unchanged.
//
//===----------------------------------------------------------------------===//

#include "OnlineSoftmaxTile.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
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

using utils::IteratorType;
static constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int64_t mlir::gated_attention::stackedHeadsPerTile(int64_t group) {
  constexpr int64_t kMaxStackedHeads = 16;
  for (int64_t r = std::min(group, kMaxStackedHeads); r > 1; --r)
    if (group % r == 0)
      return r;
  return 1;
}

//===----------------------------------------------------------------------===//
// OnlineSoftmaxTile: the tile math
//===----------------------------------------------------------------------===//

Value OnlineSoftmaxTile::padRows(Value slice, OpFoldResult paddedRows) {
  auto type = cast<RankedTensorType>(slice.getType());
  std::optional<int64_t> padded = getConstantIntValue(paddedRows);
  if (!padded || type.getDimSize(0) == *padded)
    return slice;
  auto paddedType = RankedTensorType::get({*padded, type.getDimSize(1)},
                                          type.getElementType());
  // Zeros, then the slice's rows: the fill is a static tile op that
  // gated-attention-vectorize-tiles vectorizes, and the slice becomes a
  // copy of whole rows (a tensor.pad would bufferize to element loops).
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  Value init = tensor::EmptyOp::create(b, loc, paddedType.getShape(),
                                       type.getElementType());
  Value zeros = linalg::FillOp::create(b, loc, zero, init).getResult(0);
  SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, slice, zeros, offsets,
                                       tensor::getMixedSizes(b, loc, slice),
                                       strides);
}

scf::ForOp mlir::gated_attention::buildForLoop(
    OpBuilder &b, Location loc, Value lb, Value ub, Value step,
    ValueRange inits,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, loc, lb, ub, step, inits);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> yielded =
      body(loop.getInductionVar(), loop.getRegionIterArgs());
  scf::YieldOp::create(b, loc, yielded);
  return loop;
}

Value mlir::gated_attention::buildFreshTensor(OpBuilder &b, Location loc,
                                              ArrayRef<OpFoldResult> sizes) {
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  dispatchIndexOpFoldResults(sizes, dynamicSizes, shape);
  return bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get(shape, b.getF32Type()), dynamicSizes);
}

Value mlir::gated_attention::buildFreshFill(OpBuilder &b, Location loc,
                                            ArrayRef<OpFoldResult> sizes,
                                            double v) {
  Value fresh = buildFreshTensor(b, loc, sizes);
  Value value = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  return linalg::FillOp::create(b, loc, value, fresh).getResult(0);
}

Value mlir::gated_attention::buildGeneric(
    OpBuilder &b, Location loc, ValueRange ins, Value init,
    ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
    function_ref<Value(OpBuilder &, ValueRange)> body) {
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location, ValueRange args) {
               linalg::YieldOp::create(nb, loc, body(nb, args));
             })
      .getResult(0);
}

Value OnlineSoftmaxTile::generic(
    ValueRange ins, Value init, ArrayRef<AffineMap> maps,
    ArrayRef<IteratorType> iterators,
    function_ref<Value(OpBuilder &, ValueRange)> body) {
  return buildGeneric(b, loc, ins, init, maps, iterators, body);
}

SmallVector<Value> OnlineSoftmaxTile::genericN(
    ValueRange ins, ValueRange inits, ArrayRef<AffineMap> maps,
    ArrayRef<IteratorType> iterators,
    function_ref<SmallVector<Value>(OpBuilder &, ValueRange)> body) {
  return linalg::GenericOp::create(
             b, loc, inits.getTypes(), ins, inits, maps, iterators,
             [&](OpBuilder &nb, Location, ValueRange args) {
               linalg::YieldOp::create(nb, loc, body(nb, args));
             })
      .getResults();
}

Value OnlineSoftmaxTile::headRows(Value stacked, int64_t r) {
  auto type = cast<RankedTensorType>(stacked.getType());
  int64_t rows = *getConstantIntValue(rowsTile);
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  offsets[0] = b.getIndexAttr(r * rows);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, stacked);
  sizes[0] = b.getIndexAttr(rows);
  return tensor::ExtractSliceOp::create(
      b, loc, stacked, offsets, sizes,
      SmallVector<OpFoldResult>(type.getRank(), b.getIndexAttr(1)));
}

SmallVector<Value> OnlineSoftmaxTile::splitHeads(ArrayRef<Value> stacked) {
  if (stack == 1)
    return SmallVector<Value>(stacked);
  SmallVector<Value> heads;
  for (Value value : stacked)
    for (int64_t r = 0; r < stack; ++r)
      heads.push_back(headRows(value, r));
  return heads;
}

Value OnlineSoftmaxTile::queryTile(Value firstHead) {
  // Extended to f32 and pre-scaled once per tile, not once per key block.
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  OpFoldResult d = b.getIndexAttr(spec.headDim);
  auto scaled = [&](Value rows, Value init) {
    return generic(rows, init, {id2, id2},
                   {IteratorType::parallel, IteratorType::parallel},
                   [&](OpBuilder &nb, ValueRange args) -> Value {
                     Value x = toF32(nb, args[0]);
                     if (scalesScores())
                       return x;
                     return arith::MulFOp::create(nb, loc, x,
                                                  f32Const(nb, spec.scale));
                   });
  };
  auto head = [&](int64_t r) {
    return rowsOf(Operand::Query,
                  arith::AddIOp::create(b, loc, firstHead, index(r)));
  };
  if (stack == 1)
    return scaled(head(0), empty({tileRows, d}, f32));
  int64_t rows = *getConstantIntValue(rowsTile);
  auto insertHead = [&](Value rowsOfHead, Value into, int64_t r) -> Value {
    return tensor::InsertSliceOp::create(
        b, loc, rowsOfHead, into,
        ArrayRef<OpFoldResult>{b.getIndexAttr(r * rows), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rowsTile, d},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  };
  // f32: each head's rows scaled straight into their place in the stacked
  // tile, one pass. Narrower types are stacked as they are, then extended
  // (scaled where the scores are not, scalesScores) in one generic: the
  // bf16 matrix-unit lowering multiplies the stacked bf16 tile itself
  // (matchScaledExtension), where a rounded scaled copy would add an error
  // the error model does not have.
  if (spec.elementType == f32) {
    Value q = empty({tileRows, d}, f32);
    for (int64_t r = 0; r < stack; ++r)
      q = insertHead(scaled(head(r), headRows(q, r)), q, r);
    return q;
  }
  Value stacked = empty({tileRows, d}, spec.elementType);
  for (int64_t r = 0; r < stack; ++r)
    stacked = insertHead(head(r), stacked, r);
  return scaled(stacked, empty({tileRows, d}, f32));
}

OnlineSoftmaxTile::State OnlineSoftmaxTile::keyBlockStep(Value q, Value k,
                                                         Value v, State s,
                                                         Value kb,
                                                         bool masked) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  auto par = IteratorType::parallel, red = IteratorType::reduction;
  OpFoldResult bk = b.getIndexAttr(blockKeys);
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
  // that bufferization keeps the state in place across iterations.
  // The row max drops NaN scores (maxnumf: on x86 three instructions a
  // step, maximumf's NaN and signed-zero selects take six): m moves only on
  // an ordered comparison (buildRunningMax), so it never held a NaN, and
  // a NaN score still makes its row NaN through P = exp(S - m').
  Value rowMax = generic(scores, filled({tileRows}, kNegInf), {ij, i},
                         {par, red}, [&](OpBuilder &nb, ValueRange a) -> Value {
                           return arith::MaxNumFOp::create(nb, loc, a[0], a[1]);
                         });
  // Unscaled scores (scalesScores): the scale is applied to the row max and
  // to each score in the weights' exponent, not in a pass of its own.
  auto scaledScore = [&](OpBuilder &nb, Value s) -> Value {
    return scalesScores()
               ? arith::MulFOp::create(nb, loc, s, f32Const(nb, spec.scale))
               : s;
  };
  if (scalesScores())
    rowMax = generic({}, rowMax, {i1}, {par},
                     [&](OpBuilder &nb, ValueRange a) -> Value {
                       return scaledScore(nb, a[0]);
                     });

  // The weights are scaled by sigma (buildOverflowScale: 1 unless max|v|
  // approaches the f32 range); f = sigma' / sigma rescales the state.
  Value sigma, scaleStep, vmax;
  if (s.vmax) {
    // max|v| of the block on |v|'s bits: non-negative floats order as
    // their bit patterns, NaN's above inf's, so an unsigned integer max is
    // maximumf's answer here without its NaN and signed-zero selects. The
    // columns' maxima over the keys come first (lane by lane), then one
    // reduction over Dv, not one horizontal reduction per key. bf16 values
    // are compared on their own 16 bits (twice the lanes a vector, no
    // extension), which are the high half of the f32's.
    bool bf16 = isa<BFloat16Type>(spec.elementType);
    Type bitsType = bf16 ? b.getI16Type() : b.getI32Type();
    unsigned width = bitsType.getIntOrFloatBitWidth();
    AffineMap j = map(2, {d1}), none = AffineMap::get(1, 0, {}, ctx);
    auto zeros = [&](ArrayRef<OpFoldResult> sizes) {
      Value zero = arith::ConstantIntOp::create(b, loc, bitsType, 0);
      return linalg::FillOp::create(b, loc, zero, empty(sizes, bitsType))
          .getResult(0);
    };
    Value columnMax =
        generic(v, zeros({b.getIndexAttr(spec.valueHeadDim)}), {ij, j},
                {red, par}, [&](OpBuilder &nb, ValueRange a) -> Value {
                  Value x = bf16 ? a[0] : toF32(nb, a[0]);
                  Value bits = arith::BitcastOp::create(nb, loc, bitsType, x);
                  Value magnitude = arith::AndIOp::create(
                      nb, loc, bits,
                      arith::ConstantIntOp::create(
                          nb, loc, bitsType,
                          APInt::getSignedMaxValue(width).getZExtValue()));
                  return arith::MaxUIOp::create(nb, loc, a[1], magnitude);
                });
    Value blockMax =
        generic(columnMax, zeros({}), {i1, none}, {red},
                [&](OpBuilder &nb, ValueRange a) -> Value {
                  return arith::MaxUIOp::create(nb, loc, a[1], a[0]);
                });
    blockMax = tensor::ExtractOp::create(b, loc, blockMax, ValueRange{});
    if (bf16) {
      Type i32 = b.getI32Type();
      blockMax = arith::ExtUIOp::create(b, loc, i32, blockMax);
      blockMax = arith::ShLIOp::create(
          b, loc, blockMax, arith::ConstantIntOp::create(b, loc, i32, 16));
    }
    blockMax = arith::BitcastOp::create(b, loc, f32, blockMax);
    vmax = arith::MaximumFOp::create(b, loc, s.vmax, blockMax);
    Value seen = arith::AddIOp::create(b, loc, kb, index(blockKeys));
    // A part of the keys (split-KV) counts its keys times the parts: the
    // merge adds the parts' sums, each then below 2^126 / parts.
    if (partBegin)
      seen = arith::MulIOp::create(
          b, loc, arith::SubIOp::create(b, loc, seen, partBegin), numParts);
    sigma = buildOverflowScale(b, loc, vmax, seen);
    scaleStep = arith::DivFOp::create(b, loc, sigma, s.sigma);
  }

  // m' moves only when a block's maximum exceeds m by more than
  // kRescaleThreshold (buildRunningMax); P = exp(S - m') sigma', where m'
  // is recomputed elementwise so that m is overwritten only once, after its
  // last use.
  auto newMax = [&](OpBuilder &nb, Value m, Value blockMax) {
    return buildSoftmaxShift(nb, loc, buildRunningMax(nb, loc, m, blockMax));
  };
  Value probs =
      generic({s.m, rowMax}, scores, {i, i, ij}, {par, par},
              [&](OpBuilder &nb, ValueRange a) -> Value {
                Value d = arith::SubFOp::create(nb, loc, scaledScore(nb, a[2]),
                                                newMax(nb, a[0], a[1]));
                // (sigma' = 2^k enters 2^n as k: a multiply fewer.)
                return buildWeightExp(nb, loc, d, sigma);
              });
  // alpha = exp(m - m') f, the rescaling of what was accumulated so far (1
  // on the blocks where m' = m and sigma' = sigma).
  Value alpha = generic(
      {s.m, rowMax}, empty({tileRows}, f32), {i1, i1, i1}, {par},
      [&](OpBuilder &nb, ValueRange a) -> Value {
        Value d = arith::SubFOp::create(nb, loc, a[0], newMax(nb, a[0], a[1]));
        Value alpha = buildWeightExp(nb, loc, d);
        if (scaleStep)
          alpha = arith::MulFOp::create(nb, loc, alpha, scaleStep);
        return alpha;
      });
  // (Read before m is overwritten in place.)
  Value moved = anyRescaled(alpha, s.m);
  Value mOut = generic(rowMax, s.m, {i1, i1}, {par},
                       [&](OpBuilder &nb, ValueRange a) -> Value {
                         return buildRunningMax(nb, loc, a[1], a[0]);
                       });

  // Compensated summation (buildCompensatedAdd) of the block's row sums
  // into alpha l: its error does not grow with the number of key blocks.
  // The compensation c (scaled by alpha with the sum) becomes the start of
  // the block's sum, y = -alpha c + rowsum P, so that the block is summed
  // in place; then t = alpha l + y and c' = (t - alpha l) - y. P V_blk goes
  // to the chunk of acc (chunkStep).
  Value negScaledComp =
      generic(alpha, s.lComp, {i1, i1}, {par},
              [&](OpBuilder &nb, ValueRange a) -> Value {
                Value c = arith::MulFOp::create(nb, loc, a[1], a[0]);
                return arith::NegFOp::create(nb, loc, c);
              });
  Value lY = generic(probs, negScaledComp, {ij, i}, {par, red},
                     [&](OpBuilder &nb, ValueRange a) -> Value {
                       return arith::AddFOp::create(nb, loc, a[0], a[1]);
                     });
  SmallVector<Value> lSums =
      genericN(alpha, {s.l, lY}, {i1, i1, i1}, {par},
               [&](OpBuilder &nb, ValueRange a) -> SmallVector<Value> {
                 Value scaled = arith::MulFOp::create(nb, loc, a[1], a[0]);
                 auto [t, c] = buildCompensatedAdd(nb, loc, scaled, a[2]);
                 return {t, c};
               });
  auto accumulate = [&](Value init) {
    Value sum =
        generic({probs, v}, init,
                {map(3, {d0, d2}), map(3, {d2, d1}), map(3, {d0, d1})},
                {par, par, red}, [&](OpBuilder &nb, ValueRange a) -> Value {
                  Value prod =
                      arith::MulFOp::create(nb, loc, a[0], toF32(nb, a[1]));
                  return arith::AddFOp::create(nb, loc, a[2], prod);
                });
    markSumFromZero(sum.getDefiningOp());
    return sum;
  };
  State next = chunkStep(s, alpha, moved, kb, accumulate);
  next.m = mOut;
  next.l = lSums[0];
  next.lComp = lSums[1];
  next.vmax = vmax;
  next.sigma = sigma;
  return next;
}

Value OnlineSoftmaxTile::anyRescaled(Value alpha, Value m) {
  MLIRContext *ctx = b.getContext();
  AffineMap i1 = map(1, {b.getAffineDimExpr(0)});
  // The three sums rescaled by alpha only in the blocks where some row's
  // alpha is not 1 (m' moves a few times a row, buildRunningMax), not in
  // passes over them every block; a row whose m was -inf has sums of 0 (or
  // NaN, from 0 * inf), which its alpha of 0 leaves as they are, so the
  // first block rescales nothing. (une: a NaN alpha rescales.)
  Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  Value none = linalg::FillOp::create(b, loc, ValueRange{no},
                                      ValueRange{empty({}, b.getI1Type())})
                   .getResult(0);
  Value moved = generic(
      {alpha, m}, none, {i1, i1, AffineMap::get(1, 0, {}, ctx)},
      {IteratorType::reduction}, [&](OpBuilder &nb, ValueRange a) -> Value {
        Value other = arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::UNE,
                                            a[0], f32Const(nb, 1.0));
        Value seen = arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::ONE,
                                           a[1], f32Const(nb, kNegInf));
        return arith::OrIOp::create(
            nb, loc, a[2], arith::AndIOp::create(nb, loc, other, seen));
      });
  moved = tensor::ExtractOp::create(b, loc, moved, ValueRange{});
  return moved;
}

OnlineSoftmaxTile::State
OnlineSoftmaxTile::chunkStep(State s, Value alpha, Value moved, Value kb,
                             function_ref<Value(Value)> accumulate) {
  auto par = IteratorType::parallel;
  AffineMap ij = map(2, {b.getAffineDimExpr(0), b.getAffineDimExpr(1)});
  AffineMap i = map(2, {b.getAffineDimExpr(0)});
  SmallVector<Value> sums = {s.chunk, s.acc, s.accComp};
  auto rescaled = scf::IfOp::create(
      b, loc, moved,
      [&](OpBuilder &nb, Location l) {
        auto op = linalg::GenericOp::create(
            nb, l, ValueRange(sums).getTypes(), alpha, sums, {i, ij, ij, ij},
            {par, par}, [&](OpBuilder &bb, Location, ValueRange a) {
              SmallVector<Value> out;
              for (Value sum : a.drop_front())
                out.push_back(arith::MulFOp::create(bb, loc, sum, a[0]));
              linalg::YieldOp::create(bb, loc, out);
            });
        scf::YieldOp::create(nb, l, op.getResults());
      },
      [&](OpBuilder &nb, Location l) { scf::YieldOp::create(nb, l, sums); });
  sums = rescaled.getResults();
  sums[0] = accumulate(sums[0]);
  // The block that reaches a multiple of kAccChunkKeys ends the chunk: it
  // is added to (acc, accComp) with compensation (the first one replaces
  // them) and starts again from 0.
  // (One op a statement: the order of evaluating arguments, and so of the
  // ops, differs between compilers.)
  Value chunkKeys = index(kAccChunkKeys);
  Value chunkOfBlock = arith::DivUIOp::create(b, loc, kb, chunkKeys);
  Value blockEnd = arith::AddIOp::create(b, loc, kb, index(blockKeys));
  Value chunkOfEnd = arith::DivUIOp::create(b, loc, blockEnd, chunkKeys);
  Value ends = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                     chunkOfEnd, chunkOfBlock);
  auto fold = scf::IfOp::create(
      b, loc, ends,
      [&](OpBuilder &nb, Location l) {
        auto op = linalg::GenericOp::create(
            nb, l, TypeRange{sums[1].getType(), sums[2].getType()}, sums[0],
            ValueRange{sums[1], sums[2]}, {ij, ij, ij}, {par, par},
            [&](OpBuilder &bb, Location, ValueRange a) {
              Value y = arith::SubFOp::create(bb, loc, a[0], a[2]);
              auto [t, c] = buildCompensatedAdd(bb, loc, a[1], y);
              t = arith::SelectOp::create(bb, loc, s.folded, t, a[0]);
              c = arith::SelectOp::create(bb, loc, s.folded, c,
                                          f32Const(bb, 0.0));
              linalg::YieldOp::create(bb, loc, ValueRange{t, c});
            });
        Value zero = linalg::FillOp::create(nb, l, f32Const(nb, 0.0), sums[0])
                         .getResult(0);
        Value yes = arith::ConstantIntOp::create(nb, l, nb.getI1Type(), 1);
        scf::YieldOp::create(
            nb, l, ValueRange{zero, op.getResult(0), op.getResult(1), yes});
      },
      [&](OpBuilder &nb, Location l) {
        scf::YieldOp::create(nb, l,
                             ValueRange{sums[0], sums[1], sums[2], s.folded});
      });
  State next = s;
  next.chunk = fold.getResult(0);
  next.acc = fold.getResult(1);
  next.accComp = fold.getResult(2);
  next.folded = fold.getResult(3);
  return next;
}

OnlineSoftmaxTile::State OnlineSoftmaxTile::finishChunks(State s) {
  AffineMap ij = b.getMultiDimIdentityMap(2);
  auto par = IteratorType::parallel;
  // acc - accComp is the compensated sum (buildCompensatedAdd); the open
  // chunk adds to it, in place.
  auto total = scf::IfOp::create(
      b, loc, s.folded,
      [&](OpBuilder &nb, Location l) {
        Value sum = buildGeneric(
            nb, l, {s.acc, s.accComp}, s.chunk, {ij, ij, ij}, {par, par},
            [&](OpBuilder &bb, ValueRange a) -> Value {
              return arith::AddFOp::create(
                  bb, loc, a[0], arith::SubFOp::create(bb, loc, a[2], a[1]));
            });
        scf::YieldOp::create(nb, l, sum);
      },
      [&](OpBuilder &nb, Location l) { scf::YieldOp::create(nb, l, s.chunk); });
  State done = s;
  done.acc = total.getResult(0);
  done.accComp = done.chunk = done.folded = Value();
  return done;
}

SmallVector<Value> OnlineSoftmaxTile::epilogue(State s, Value firstHead) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  auto par = IteratorType::parallel;
  AffineMap i1 = map(1, {d0}), ij = map(2, {d0, d1}), i = map(2, {d0});
  // 1 / l, or 0 for a row that saw no key (its acc is 0 as well).
  // The compensated sums are sum - comp (buildCompensatedAdd).
  Value inv = generic({s.l, s.lComp}, empty({tileRows}, f32), {i1, i1, i1},
                      {par}, [&](OpBuilder &nb, ValueRange a) -> Value {
                        Value l = arith::SubFOp::create(nb, loc, a[0], a[1]);
                        return buildInverseRowSum(nb, loc, l);
                      });
  // One generic a head, reading its gate rows in place and writing the rows
  // the caller inserts into the result, so that neither the gate nor the
  // output is copied through a stacked tile.
  SmallVector<AffineMap> maps = {ij, i};
  if (spec.hasGate)
    maps.push_back(
        spec.gateHeadwise ? map(2, {d0, getAffineConstantExpr(0, ctx)}) : ij);
  maps.push_back(ij);
  // A gate shared by the heads is read (and padded) once.
  Value sharedGate = spec.hasGate && spec.gateShared
                         ? rowsOf(Operand::Gate, index(0))
                         : Value();
  SmallVector<Value> outs;
  for (int64_t r = 0; r < stack; ++r) {
    auto rowsOfHead = [&](Value v) { return stack == 1 ? v : headRows(v, r); };
    SmallVector<Value> inputs = {rowsOfHead(s.acc), rowsOfHead(inv)};
    if (sharedGate)
      inputs.push_back(sharedGate);
    else if (spec.hasGate)
      inputs.push_back(rowsOf(
          Operand::Gate, arith::AddIOp::create(b, loc, firstHead, index(r))));
    Value init =
        empty({rowsTile, b.getIndexAttr(spec.valueHeadDim)}, spec.elementType);
    outs.push_back(generic(
        inputs, init, maps, {par, par},
        [&](OpBuilder &nb, ValueRange a) -> Value {
          Value y = arith::MulFOp::create(nb, loc, a[0], a[1]);
          Value g = spec.hasGate ? toF32(nb, a[inputs.size() - 1]) : Value();
          return buildGatedOutput(nb, loc, y, g, spec.gate, spec.combine,
                                  spec.elementType);
        }));
  }
  return outs;
}

Value OnlineSoftmaxTile::logSumExp(State s) {
  AffineMap i1 = map(1, {b.getAffineDimExpr(0)});
  return generic(
      {s.m, s.l, s.lComp}, empty({tileRows}, f32), {i1, i1, i1, i1},
      {IteratorType::parallel}, [&](OpBuilder &nb, ValueRange a) -> Value {
        Value l = arith::SubFOp::create(nb, loc, a[1], a[2]);
        Value lse =
            buildLogSumExp(nb, loc, buildSoftmaxShift(nb, loc, a[0]), l);
        if (s.sigma)
          lse = arith::SubFOp::create(nb, loc, lse,
                                      math::LogOp::create(nb, loc, s.sigma));
        return lse;
      });
}

/// The blocks after a tile's whole key blocks of `keyBlock` (from
/// 4 * kSmallBlock, as 16-bit keys take): half as long, so that the last,
/// masked block pads no more than with half-length blocks, and a causal
/// diagonal of `diagonal`-key blocks (0: none) starts where it would. On the
/// 2-core AMX Xeon (bench/cpu_attention_ab.py --dynamic, bf16, 2026-12-06)
/// 256-key blocks without them ran Qwen3-Next's S 512 at 0.92x the 128-key
/// ones: its causal tiles handed up to 255 keys to the 32-key diagonal blocks.
static int64_t halfKeyBlock(int64_t keyBlock, int64_t diagonal) {
  int64_t half = keyBlock / 2;
  if (keyBlock < 4 * kSmallBlock || keyBlock % 2 ||
      (diagonal && half % diagonal))
    return keyBlock;
  return half;
}

OnlineSoftmaxTile::State
OnlineSoftmaxTile::keyLoops(Value firstHead, Value keyBegin, Value keyEnd) {
  // Keys from keyEnd on are masked like keys past the end.
  this->numKeys = keyEnd;
  int64_t keyBlock = spec.keyBlock;
  Value kvHead =
      arith::DivUIOp::create(b, loc, firstHead, index(spec.groupSize));
  Value q = queryTile(firstHead);

  OpFoldResult dv = b.getIndexAttr(spec.valueHeadDim);
  auto start = [&](ArrayRef<OpFoldResult> sizes, double v) {
    return buildFreshFill(b, loc, sizes, v);
  };
  State state{start({tileRows}, kNegInf), start({tileRows}, 0.0),
              start({tileRows}, 0.0)};
  // acc and accComp are written by the first fold, before any read.
  state.acc = buildFreshTensor(b, loc, {tileRows, dv});
  state.accComp = buildFreshTensor(b, loc, {tileRows, dv});
  state.chunk = start({tileRows, dv}, 0.0);
  state.folded = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  if (needsOverflowScale(spec.elementType)) {
    state.vmax = f32Const(b, 0.0);
    state.sigma = f32Const(b, 1.0);
  }

  // Keys [0, unmasked) are visible to every row of the tile in whole blocks:
  // without causal, all full blocks; with causal, the full blocks up to what
  // row 0 sees (j <= offset).
  Value visibleToAll = keyEnd;
  if (causalOffset) {
    Value seen = buildCausalKeyBound(b, loc, index(0), causalOffset);
    seen = arith::MaxSIOp::create(b, loc, seen, index(0));
    visibleToAll = arith::MinSIOp::create(b, loc, seen, keyEnd);
  }
  auto wholeBlocks = [&](int64_t block) -> Value {
    Value whole = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, visibleToAll, index(block)),
        index(block));
    // A part that starts past them has no unmasked block.
    if (!isConstantIntValue(keyBegin, 0))
      whole = arith::MaxSIOp::create(b, loc, whole, keyBegin);
    return whole;
  };

  auto keyLoop = [&](Value lb, Value ub, int64_t block, bool masked) {
    blockKeys = block;
    OpFoldResult bk = b.getIndexAttr(block);
    auto loop = forLoop(
        lb, ub, index(block), state.values(),
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
                    {getAffineConstantExpr(block, b.getContext()), n - k0},
                    b.getContext()),
                {kb, keyEnd});
          }
          Value k = keysOf(Operand::Key, kvHead, kb, cols);
          Value v = keysOf(Operand::Value, kvHead, kb, cols);
          State next =
              keyBlockStep(q, k, v, State::of(iter, state), kb, masked);
          return next.values();
        });
    state = State::of(loop.getResults(), state);
  };
  int64_t diagonal = spec.diagonalKeyBlock;
  bool shortDiagonal = causalOffset && diagonal > 0 && diagonal < keyBlock;
  int64_t half = halfKeyBlock(keyBlock, shortDiagonal ? diagonal : 0);
  Value unmasked = wholeBlocks(keyBlock);
  keyLoop(keyBegin, unmasked, keyBlock, /*masked=*/false);
  // Long blocks leave up to keyBlock - 1 keys: one whole half block of
  // them, so the blocks after it are as few as with half-length blocks.
  if (half != keyBlock) {
    Value wholeHalves = wholeBlocks(half);
    keyLoop(unmasked, wholeHalves, half, /*masked=*/false);
    unmasked = wholeHalves;
  }
  // On a causal tile's diagonal, shorter blocks: the whole ones up to what
  // row 0 sees, then the masked ones, each computing fewer keys past a
  // row's last. (After half blocks, all masked: a fourth loop in a row
  // made one-shot-bufferize 20x as slow, 0.6 to 12 s; its getBufferType
  // walks each loop's iter_args again for every path to them.)
  if (shortDiagonal && half != keyBlock) {
    keyLoop(unmasked, keyEnd, diagonal, /*masked=*/true);
  } else if (shortDiagonal) {
    Value unmaskedDiagonal = wholeBlocks(diagonal);
    keyLoop(unmasked, unmaskedDiagonal, diagonal, /*masked=*/false);
    keyLoop(unmaskedDiagonal, keyEnd, diagonal, /*masked=*/true);
  } else {
    keyLoop(unmasked, keyEnd, half, /*masked=*/true);
  }
  blockKeys = keyBlock;
  return finishChunks(state);
}

SmallVector<Value> OnlineSoftmaxTile::build(Value firstHead, Value numKeys,
                                            Value causalOffset) {
  this->causalOffset = causalOffset;
  partBegin = numParts = Value();
  State state = keyLoops(firstHead, index(0), numKeys);
  lse = spec.withLse ? logSumExp(state) : Value();
  return epilogue(state, firstHead);
}

OnlineSoftmaxTile::Partial
OnlineSoftmaxTile::buildPartial(Value firstHead, Value numKeys,
                                Value causalOffset, Value split, Value splits) {
  this->causalOffset = causalOffset;
  // Parts of whole key blocks, so that each part's unmasked blocks are the
  // unsplit tile's.
  int64_t bk = spec.keyBlock;
  Value perPart = arith::CeilDivUIOp::create(b, loc, numKeys, splits);
  Value chunk = arith::MulIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, perPart, index(bk)),
      index(bk));
  Value begin = arith::MulIOp::create(b, loc, chunk, split);
  Value end = arith::MinSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, begin, chunk), numKeys);
  partBegin = begin;
  numParts = splits;
  State state = keyLoops(firstHead, begin, end);
  partBegin = numParts = Value();
  AffineMap i1 = map(1, {b.getAffineDimExpr(0)});
  auto par = IteratorType::parallel;
  // The compensated sums are sum - comp (buildCompensatedAdd).
  auto compensated = [&](Value sum, Value comp, AffineMap m) {
    return generic({sum, comp}, empty(tensor::getMixedSizes(b, loc, sum), f32),
                   {m, m, m}, SmallVector<IteratorType>(m.getNumDims(), par),
                   [&](OpBuilder &nb, ValueRange a) -> Value {
                     return arith::SubFOp::create(nb, loc, a[0], a[1]);
                   });
  };
  Value sigma = state.sigma ? state.sigma : f32Const(b, 1.0);
  return {state.acc, compensated(state.l, state.lComp, i1), state.m,
          linalg::FillOp::create(b, loc, sigma, empty({tileRows}, f32))
              .getResult(0)};
}

SmallVector<Value> OnlineSoftmaxTile::buildWithDecodeRows(
    Value numRows, int64_t bound, function_ref<SmallVector<Value>()> version) {
  auto versionOf = [&](int64_t headRows) {
    rowsTile = b.getIndexAttr(headRows);
    tileRows = b.getIndexAttr(stack * headRows);
    return version();
  };
  if (bound == 1)
    return versionOf(1);
  // Each version yields its values with dynamic rows.
  auto dynamicRows = [&](SmallVector<Value> values) {
    for (Value &value : values) {
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = ShapedType::kDynamic;
      value = tensor::CastOp::create(b, loc, type.clone(shape), value);
    }
    return values;
  };
  Value decode = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                       numRows, index(1));
  auto branch = scf::IfOp::create(
      b, loc, decode,
      [&](OpBuilder &nb, Location l) {
        scf::YieldOp::create(nb, l, dynamicRows(versionOf(1)));
      },
      [&](OpBuilder &nb, Location l) {
        scf::YieldOp::create(nb, l, dynamicRows(versionOf(bound)));
      });
  return SmallVector<Value>(branch.getResults());
}

SmallVector<Value> OnlineSoftmaxTile::buildWithDecodeRows(Value numRows,
                                                          int64_t bound,
                                                          Value firstHead,
                                                          Value numKeys,
                                                          Value causalOffset) {
  SmallVector<Value> values =
      buildWithDecodeRows(numRows, bound, [&]() -> SmallVector<Value> {
        SmallVector<Value> heads = build(firstHead, numKeys, causalOffset);
        if (lse)
          heads.append(splitHeads({lse}));
        return heads;
      });
  // The stacked lse of a version is returned split, not left in `lse`.
  lse = Value();
  return values;
}
