//===- AttentionMath.cpp - the op's math, one builder per piece -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;

/// A float constant of `like`'s type (a scalar or a vector; f32 in the
/// tiled lowerings, the accumulator type in the reference ones).
static Value constantLike(OpBuilder &b, Location loc, Value like,
                          double value) {
  Attribute attr = b.getFloatAttr(getElementTypeOrSelf(like.getType()), value);
  if (auto vector = dyn_cast<VectorType>(like.getType()))
    attr = DenseElementsAttr::get(vector, attr);
  return arith::ConstantOp::create(b, loc, cast<TypedAttr>(attr));
}

FloatType mlir::gated_attention::getAccumulatorType(Type elementType) {
  auto type = cast<FloatType>(elementType);
  Builder b(type.getContext());
  return type.getWidth() > 32 ? type : b.getF32Type();
}

bool mlir::gated_attention::needsWideAccumulator(Type elementType) {
  return getAccumulatorType(elementType).getWidth() > 32;
}

Value mlir::gated_attention::buildCausalOffset(OpBuilder &b, Location loc,
                                               Value numKeys, Value numRows) {
  return arith::SubIOp::create(b, loc, numKeys, numRows);
}

Value mlir::gated_attention::buildCausalKeyBound(OpBuilder &b, Location loc,
                                                 Value row, Value offset) {
  Value last = arith::AddIOp::create(b, loc, row, offset);
  return arith::AddIOp::create(b, loc, last,
                               arith::ConstantIndexOp::create(b, loc, 1));
}

Value mlir::gated_attention::buildCausalVisible(OpBuilder &b, Location loc,
                                                Value key, Value row,
                                                Value offset) {
  Value last = arith::AddIOp::create(b, loc, row, offset);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, key, last);
}

Value mlir::gated_attention::buildVarlenFirstTile(OpBuilder &b, Location loc,
                                                  Value cuOfS, Value s,
                                                  int64_t rows) {
  Value rowsValue = arith::ConstantIndexOp::create(b, loc, rows);
  Value blocks = arith::DivUIOp::create(b, loc, cuOfS, rowsValue);
  return arith::AddIOp::create(b, loc, blocks, s);
}

Value mlir::gated_attention::buildVarlenTileSequence(
    OpBuilder &b, Location loc, Value tile, Value numSeqs, int64_t rows,
    function_ref<Value(OpBuilder &, Location, Value)> cuAt) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto count = scf::ForOp::create(
      b, loc, one, numSeqs, one, ValueRange{zero},
      [&](OpBuilder &nb, Location l, Value s, ValueRange iter) {
        Value first = buildVarlenFirstTile(nb, l, cuAt(nb, l, s), s, rows);
        Value starts = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ule,
                                             first, tile);
        Value next = arith::AddIOp::create(nb, l, iter[0], one);
        scf::YieldOp::create(
            nb, l,
            Value(arith::SelectOp::create(nb, l, starts, next, iter[0])));
      });
  return count.getResult(0);
}

Value mlir::gated_attention::buildVarlenTileSequenceSearch(
    OpBuilder &b, Location loc, Value tile, Value numSeqs, int64_t rows,
    function_ref<Value(OpBuilder &, Location, Value)> cuAt) {
  // The largest s in [0, numSeqs) with first(s) <= tile (first(0) = 0 <=
  // tile): lo holds one such s, hi one past the last candidate.
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value hi = arith::MaxUIOp::create(b, loc, numSeqs, one);
  Type index = b.getIndexType();
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange{index, index}, ValueRange{zero, hi},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value gap = arith::SubIOp::create(nb, l, args[1], args[0]);
        Value more =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, gap, one);
        scf::ConditionOp::create(nb, l, more, args);
      },
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value half = arith::ShRUIOp::create(
            nb, l, arith::SubIOp::create(nb, l, args[1], args[0]), one);
        Value mid = arith::AddIOp::create(nb, l, args[0], half);
        Value first = buildVarlenFirstTile(nb, l, cuAt(nb, l, mid), mid, rows);
        Value starts = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ule,
                                             first, tile);
        scf::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, starts, mid, args[0]),
                       arith::SelectOp::create(nb, l, starts, args[1], mid)});
      });
  return loop.getResult(0);
}

Value mlir::gated_attention::buildRunningMax(OpBuilder &b, Location loc,
                                             Value m, Value blockMax) {
  Value bound = arith::AddFOp::create(
      b, loc, m, constantLike(b, loc, m, kRescaleThreshold));
  Value moves =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, blockMax, bound);
  return arith::SelectOp::create(b, loc, moves, blockMax, m);
}

std::pair<Value, Value> mlir::gated_attention::buildCompensatedAdd(OpBuilder &b,
                                                                   Location loc,
                                                                   Value sum,
                                                                   Value y) {
  Value t = arith::AddFOp::create(b, loc, sum, y);
  Value grown = arith::SubFOp::create(b, loc, t, sum);
  Value comp = arith::SubFOp::create(b, loc, grown, y);
  // An infinite sum (inf - inf in comp) keeps comp 0: it stays infinite, as
  // a plain sum does, rather than turning into NaN.
  Value infinite = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OEQ, math::AbsFOp::create(b, loc, t),
      constantLike(b, loc, t, std::numeric_limits<double>::infinity()));
  return {t, arith::SelectOp::create(b, loc, infinite,
                                     constantLike(b, loc, t, 0.0), comp)};
}

Value mlir::gated_attention::buildBiasedExponent(OpBuilder &b, Location loc,
                                                 Value x) {
  Type i32 = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value shifted = arith::ShRUIOp::create(
      b, loc, bits, arith::ConstantIntOp::create(b, loc, i32, 23));
  return arith::AndIOp::create(b, loc, shifted,
                               arith::ConstantIntOp::create(b, loc, i32, 0xff));
}

Value mlir::gated_attention::buildOverflowScale(OpBuilder &b, Location loc,
                                                Value maxAbsValue,
                                                Value numKeys) {
  // With E(x) = biased exponent of x - 126 (x < 2^E(x) for x >= 0; 129 for
  // inf and NaN), sigma = 2^min(0, 126 - E(max|v|) - E(n) - 8) keeps
  // l <= sigma n 2^8 and |acc| <= l max|v| below 2^126.
  Type i32 = b.getI32Type();
  auto i32Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  Value keys = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), numKeys);
  keys = arith::UIToFPOp::create(b, loc, b.getF32Type(), keys);
  Value sum =
      arith::AddIOp::create(b, loc, buildBiasedExponent(b, loc, maxAbsValue),
                            buildBiasedExponent(b, loc, keys));
  // 126 - (ev - 126) - (en - 126) - 8 = 370 - ev - en, at least -60.
  Value k = arith::SubIOp::create(
      b, loc, i32Const(3 * 126 - kRescaleThresholdLog2), sum);
  k = arith::MinSIOp::create(b, loc, k, i32Const(0));
  Value bits = arith::ShLIOp::create(
      b, loc, arith::AddIOp::create(b, loc, k, i32Const(127)), i32Const(23));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

bool mlir::gated_attention::needsOverflowScale(Type valueType) {
  auto type = dyn_cast<FloatType>(getElementTypeOrSelf(valueType));
  if (!type)
    return true;
  // max|v| < 2^(e + 1); 2^48 keys and 2^8 per weight must stay below 2^126.
  int e = llvm::ilogb(llvm::APFloat::getLargest(type.getFloatSemantics()));
  return e + 1 + 48 + kRescaleThresholdLog2 >= 126;
}

Value mlir::gated_attention::buildSoftmaxShift(OpBuilder &b, Location loc,
                                               Value m) {
  Value negInf =
      constantLike(b, loc, m, -std::numeric_limits<double>::infinity());
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, negInf);
  return arith::SelectOp::create(b, loc, empty, constantLike(b, loc, m, 0.0),
                                 m);
}

Value mlir::gated_attention::buildWeightExp(OpBuilder &b, Location loc, Value x,
                                            Value powerOfTwo) {
  auto c = [&](double v) { return constantLike(b, loc, x, v); };
  auto fma = [&](Value a, Value m, Value add) -> Value {
    return math::FmaOp::create(b, loc, a, m, add);
  };
  Type i32 = b.getI32Type();
  // 2^n is built from its exponent field n + 127; a scale 2^k adds k there
  // instead of a multiply, and n + k <= -127 (n < 0.5 - (k + 127)) gives 0.
  // The scale's field and that limit are computed where the scale is.
  Value field, limit;
  if (powerOfTwo) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(powerOfTwo);
    field = buildBiasedExponent(b, loc, powerOfTwo);
    limit = arith::SubFOp::create(
        b, loc, constantLike(b, loc, powerOfTwo, 0.5),
        arith::UIToFPOp::create(b, loc, powerOfTwo.getType(), field));
  } else {
    field = arith::ConstantIntOp::create(b, loc, i32, 127);
    limit = c(-126.5);
  }
  // n = x log2(e) rounded to nearest by adding 1.5 * 2^23: t's low mantissa
  // bits then hold n, so 2^n is t's bits plus the bias, shifted (the bits
  // of 1.5 * 2^23 shift out), with no float-to-int conversion.
  constexpr double kRound = 12582912.0;
  Value t = fma(x, c(1.44269502), c(kRound));
  Value n = arith::SubFOp::create(b, loc, t, c(kRound));
  // (ln 2 = 0.693359375 - 2.12194442e-4 in two parts, and Cephes' expf
  // coefficients, as upstream's expansion; the polynomial in one Horner
  // chain ending in + r + 1, 1.26 ulp at most on [-87, 0] against 1.41.)
  Value r = fma(c(-0.693359375), n, x);
  r = fma(c(2.12194442e-4), n, r);
  Value p = fma(r, c(1.98756912e-4), c(1.39819994e-3));
  for (double coefficient :
       {8.33345205e-3, 4.16657962e-2, 0.166666657, 0.5, 1.0, 1.0})
    p = fma(p, r, c(coefficient));
  Value bits = arith::BitcastOp::create(b, loc, i32, t);
  bits = arith::AddIOp::create(b, loc, bits, field);
  bits = arith::ShLIOp::create(b, loc, bits,
                               arith::ConstantIntOp::create(b, loc, i32, 23));
  Value twoToN = arith::BitcastOp::create(b, loc, x.getType(), bits);
  Value y = arith::MulFOp::create(b, loc, p, twoToN);
  // (-inf gives 0; NaN stays NaN.)
  Value under =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, n, limit);
  return arith::SelectOp::create(b, loc, under, c(0.0), y);
}

Value mlir::gated_attention::buildMergeWeight(OpBuilder &b, Location loc,
                                              Value mPart, Value m,
                                              bool base2) {
  Value d = arith::SubFOp::create(b, loc, mPart, buildSoftmaxShift(b, loc, m));
  if (base2)
    return math::Exp2Op::create(b, loc, d);
  return math::ExpOp::create(b, loc, d);
}

Value mlir::gated_attention::buildInverseRowSum(OpBuilder &b, Location loc,
                                                Value l) {
  Value zero = constantLike(b, loc, l, 0.0);
  Value one = constantLike(b, loc, l, 1.0);
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
  return arith::SelectOp::create(b, loc, empty, zero,
                                 arith::DivFOp::create(b, loc, one, l));
}

Value mlir::gated_attention::buildLogSumExp(OpBuilder &b, Location loc,
                                            Value shift, Value l) {
  Value zero = constantLike(b, loc, l, 0.0);
  Value inf = constantLike(b, loc, l, std::numeric_limits<double>::infinity());
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
  Value lse =
      arith::AddFOp::create(b, loc, shift, math::LogOp::create(b, loc, l));
  return arith::SelectOp::create(b, loc, empty, inf, lse);
}

Value mlir::gated_attention::buildCombine(OpBuilder &b, Location loc,
                                          CombineKind kind, Value y,
                                          Value act) {
  switch (kind) {
  case CombineKind::mul:
    return arith::MulFOp::create(b, loc, y, act);
  case CombineKind::add:
    return arith::AddFOp::create(b, loc, y, act);
  }
  llvm_unreachable("unknown combine kind");
}

Value mlir::gated_attention::buildGatedOutput(OpBuilder &b, Location loc,
                                              Value y, Value g,
                                              GateFunctionAttrInterface gate,
                                              CombineKind combine,
                                              Type elementType) {
  Value result = y;
  if (g)
    result = buildCombine(b, loc, combine, y, gate.buildActivation(b, loc, g));
  if (getElementTypeOrSelf(result.getType()) == elementType)
    return result;
  Type type = elementType;
  if (auto vector = dyn_cast<VectorType>(result.getType()))
    type = vector.clone(elementType);
  return arith::TruncFOp::create(b, loc, type, result);
}
