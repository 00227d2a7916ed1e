//===- KernelBuilder.h - index and f32 arithmetic for kernels ---*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The builder that every piece of the flash kernels (layout, schedule, copy
// pipeline, MMA atom, softmax, epilogue) builds with: an OpBuilder at one
// location with the index and f32 arithmetic that kernel code is made of.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_BUILDER_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_BUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace mlir::gated_attention::flash {

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &builder() const { return b; }
  Location location() const { return loc; }

  Value idx(int64_t v) const {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Value f32c(double v) const {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) const {
    return arith::AddIOp::create(b, loc, x, y);
  }
  /// x + y, or x itself for y = 0.
  Value add(Value x, int64_t y) const { return y ? add(x, idx(y)) : x; }
  Value sub(Value x, Value y) const {
    return arith::SubIOp::create(b, loc, x, y);
  }
  Value sub(Value x, int64_t y) const { return y ? sub(x, idx(y)) : x; }
  Value mul(Value x, Value y) const {
    return arith::MulIOp::create(b, loc, x, y);
  }
  Value mul(Value x, int64_t y) const {
    return arith::MulIOp::create(b, loc, x, idx(y));
  }
  Value div(Value x, int64_t y) const {
    return arith::DivUIOp::create(b, loc, x, idx(y));
  }
  Value rem(Value x, int64_t y) const {
    return arith::RemUIOp::create(b, loc, x, idx(y));
  }
  Value min(Value x, Value y) const {
    return arith::MinSIOp::create(b, loc, x, y);
  }
  Value lt(Value x, Value y) const {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value eq(Value x, Value y) const {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value select(Value c, Value x, Value y) const {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// `index` in i32: the kernels' rows, bounds and tile counts are below
  /// 2^31 (kMaxRows, checked at the op and at the launch).
  Value toI32(Value index) const {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
  }
  /// Element `i` of an i32 buffer (sequence lengths, page ids), as index.
  Value loadIndex(Value buffer, Value i) const {
    Value x = memref::LoadOp::create(b, loc, buffer, ValueRange{i});
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), x);
  }
  Value fadd(Value x, Value y) const {
    return arith::AddFOp::create(b, loc, x, y);
  }
  Value fsub(Value x, Value y) const {
    return arith::SubFOp::create(b, loc, x, y);
  }
  Value fmul(Value x, Value y) const {
    return arith::MulFOp::create(b, loc, x, y);
  }
  Value fmax(Value x, Value y) const {
    return arith::MaxNumFOp::create(b, loc, x, y);
  }

protected:
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_BUILDER_H
