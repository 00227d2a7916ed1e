//===- FragmentLayout.cpp - where a lane's accumulators are ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "FragmentLayout.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

LaneLayout LaneLayout::build(const KernelBuilder &kb) {
  return build(kb, gpu::ThreadIdOp::create(kb.builder(), kb.location(),
                                           gpu::Dimension::x));
}

LaneLayout LaneLayout::build(const KernelBuilder &kb, Value thread) {
  LaneLayout layout;
  layout.thread = thread;
  layout.warp = kb.div(layout.thread, 32);
  layout.lane = kb.rem(layout.thread, 32);
  layout.quadRow = kb.div(layout.lane, 4);
  layout.quadCol = kb.rem(layout.lane, 4);
  return layout;
}

Value mlir::gated_attention::flash::quadReduce(const KernelBuilder &kb, Value x,
                                               bool isMax) {
  for (int32_t offset : {1, 2}) {
    Value other = gpu::ShuffleOp::create(kb.builder(), kb.location(), x, offset,
                                         32, gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    x = isMax ? kb.fmax(x, other) : kb.fadd(x, other);
  }
  return x;
}

/// Two f32 rounded to `elementType`, packed in a b32 register.
static Value pack(const KernelBuilder &kb, Value lo, Value hi,
                  Type elementType) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value pair = vector::FromElementsOp::create(
      b, loc, VectorType::get({2}, b.getF32Type()), ValueRange{lo, hi});
  Value rounded =
      arith::TruncFOp::create(b, loc, VectorType::get({2}, elementType), pair);
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), rounded);
  return vector::ExtractOp::create(b, loc, word, 0);
}

Fragment mlir::gated_attention::flash::probabilityFragment(
    const KernelBuilder &kb, AccumulatorTile p, int64_t kk, Type elementType) {
  auto at = [&](int64_t t, int64_t half, int64_t c) {
    return p.at(t, half, c);
  };
  return {pack(kb, at(2 * kk, 0, 0), at(2 * kk, 0, 1), elementType),
          pack(kb, at(2 * kk, 1, 0), at(2 * kk, 1, 1), elementType),
          pack(kb, at(2 * kk + 1, 0, 0), at(2 * kk + 1, 0, 1), elementType),
          pack(kb, at(2 * kk + 1, 1, 0), at(2 * kk + 1, 1, 1), elementType)};
}
