//===- IndexBuilder.h - index arithmetic over tensor tables -----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The index arithmetic of the paged op's tensor-level lowerings (unpage,
// the CPU tiles): sizes, offsets and i32 table entries read as indices.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_INDEX_BUILDER_H
#define GATED_ATTENTION_LIB_TRANSFORMS_INDEX_BUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::gated_attention {

struct IndexBuilder {
  OpBuilder &b;
  Location loc;

  Value c(int64_t v) const { return arith::ConstantIndexOp::create(b, loc, v); }
  /// Element `i` of an i32 tensor (a block table, lengths, offsets), as an
  /// index.
  Value at(Value table, ValueRange i) const {
    Value x = tensor::ExtractOp::create(b, loc, table, i);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), x);
  }
  Value dim(Value v, int64_t i) const {
    return tensor::DimOp::create(b, loc, v, i);
  }
  Value add(Value x, Value y) const {
    return arith::AddIOp::create(b, loc, x, y);
  }
  Value sub(Value x, Value y) const {
    return arith::SubIOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) const {
    return arith::MulIOp::create(b, loc, x, y);
  }
  Value div(Value x, Value y) const {
    return arith::DivUIOp::create(b, loc, x, y);
  }
  Value rem(Value x, Value y) const {
    return arith::RemUIOp::create(b, loc, x, y);
  }
  Value min(Value x, Value y) const {
    return arith::MinSIOp::create(b, loc, x, y);
  }
  Value max(Value x, Value y) const {
    return arith::MaxSIOp::create(b, loc, x, y);
  }
  Value le(Value x, Value y) const {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y);
  }
};

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_INDEX_BUILDER_H
