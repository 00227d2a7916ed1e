//===- AttentionMath.cpp - the op's math, one builder per piece -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;

static Value f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
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

Value mlir::gated_attention::buildSoftmaxShift(OpBuilder &b, Location loc,
                                               Value m) {
  Value negInf = f32Constant(b, loc, -std::numeric_limits<double>::infinity());
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, negInf);
  return arith::SelectOp::create(b, loc, empty, f32Constant(b, loc, 0.0), m);
}

Value mlir::gated_attention::buildInverseRowSum(OpBuilder &b, Location loc,
                                                Value l) {
  Value zero = f32Constant(b, loc, 0.0);
  Value one = f32Constant(b, loc, 1.0);
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
  return arith::SelectOp::create(b, loc, empty, zero,
                                 arith::DivFOp::create(b, loc, one, l));
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
