//===- BackwardFragments.cpp - global fragments of the backward -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The pieces the backward kernels share beyond the forward's: A fragments
// read straight from global memory (dY in the dQ kernel, V in the dK/dV
// kernel: operands read once per tile, or not worth a shared tile), the
// log-sum-exp in the exponent's units, and the store of an accumulator's
// rows.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::gated_attention::flash;

/// Element pairs start at even columns of rows of even width.
static const llvm::Align kPairAlignment(4);

Value mlir::gated_attention::flash::contiguousSlab(const KernelBuilder &kb,
                                                   Value batch, Value head,
                                                   int64_t heads, Value rows,
                                                   int64_t width) {
  Value slab = kb.add(kb.mul(batch, heads), head);
  return kb.mul(kb.mul(slab, rows), width);
}

Fragment mlir::gated_attention::flash::loadGlobalFragment(
    const KernelBuilder &kb, const LaneLayout &lanes, Type elementType,
    Value buffer, Value base, int64_t rowStride, Value row0, Value numRows,
    int64_t kk) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto pairType = VectorType::get({2}, elementType);
  auto wordType = VectorType::get({1}, b.getI32Type());
  Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  Value column = kb.add(lanes.columnPair(kb), 16 * kk);
  // Registers (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8).
  Fragment regs;
  for (int64_t high : {0, 1})
    for (int64_t half : {0, 1}) {
      Value row = lanes.row(kb, row0, half);
      Value valid = kb.lt(row, numRows);
      // A row past the slab reads row 0 (there is one: the kernel runs
      // only on rows) and is replaced by 0.
      Value at = kb.add(
          kb.add(base, kb.mul(kb.select(valid, row, kb.idx(0)), rowStride)),
          kb.add(column, 8 * high));
      Value pair =
          vector::LoadOp::create(b, loc, pairType, buffer, ValueRange{at},
                                 /*nontemporal=*/false, kPairAlignment);
      Value word = vector::BitCastOp::create(b, loc, wordType, pair);
      Value bits = vector::ExtractOp::create(b, loc, word, 0);
      regs.push_back(kb.select(valid, bits, zero));
    }
  return regs;
}

Value mlir::gated_attention::flash::lseToLog2(const KernelBuilder &kb,
                                              Value lse, Value valid) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value inf = kb.f32c(std::numeric_limits<double>::infinity());
  Value sawKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, lse,
                            kb.f32c(-std::numeric_limits<double>::infinity()));
  Value use = arith::AndIOp::create(b, loc, valid, sawKey);
  return kb.select(use, kb.fmul(lse, kb.f32c(M_LOG2E)), inf);
}

void mlir::gated_attention::flash::storeAccumulatorRows(
    const KernelBuilder &kb, const LaneLayout &lanes, AccumulatorTile acc,
    Type elementType, Value buffer, Value base, int64_t rowStride, Value row0,
    Value numRows) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto pairType = VectorType::get({2}, elementType);
  auto f32PairType = VectorType::get({2}, b.getF32Type());
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
    Value row = lanes.row(kb, row0, half);
    auto ifOp = scf::IfOp::create(b, loc, kb.lt(row, numRows));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value start = kb.add(base, kb.mul(row, rowStride));
    for (int64_t t = 0; t < acc.numTiles(); ++t) {
      Value pair = vector::FromElementsOp::create(
          b, loc, f32PairType,
          ValueRange{acc.at(t, half, 0), acc.at(t, half, 1)});
      Value packed = arith::TruncFOp::create(b, loc, pairType, pair);
      Value col = kb.add(lanes.columnPair(kb), t * 8);
      vector::StoreOp::create(b, loc, packed, buffer,
                              ValueRange{kb.add(start, col)},
                              /*nontemporal=*/false, kPairAlignment);
    }
  }
}
