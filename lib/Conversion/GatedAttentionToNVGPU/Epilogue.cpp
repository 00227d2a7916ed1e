//===- Epilogue.cpp - the gated output of the flash kernels ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include <limits>

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

/// The epilogue's column pairs start at even columns of rows of even
/// length: 4-byte aligned in buffers that are (cp.async already needs 16),
/// so each pair is one 32-bit access rather than two 16-bit ones.
static const llvm::Align kPairAlignment(4);

namespace {
/// Row `half` of the lane in a tile starting at `row0`: the sequence's row
/// (what the bound is checked on) and, for packed heads (rowGroup > 1),
/// the head's place among them.
struct EpilogueRow {
  Value row, group;

  EpilogueRow(const KernelBuilder &kb, const LaneLayout &lanes, Value row0,
              int64_t half, int64_t rowGroup)
      : row(lanes.row(kb, row0, half)) {
    if (rowGroup > 1) {
      group = kb.rem(row, rowGroup);
      row = kb.div(row, rowGroup);
    }
  }

  /// Where the row starts in a buffer of rows `rowStride` apart whose
  /// packed heads are `groupStride` apart (null: 0), from `base`.
  Value start(const KernelBuilder &kb, Value base, Value rowStride,
              Value groupStride) const {
    Value offset = kb.add(base, kb.mul(row, rowStride));
    return group && groupStride ? kb.add(offset, kb.mul(group, groupStride))
                                : offset;
  }
  Value start(const KernelBuilder &kb, Value base, Value rowStride,
              int64_t groupStride) const {
    Value offset = kb.add(base, kb.mul(row, rowStride));
    return group ? kb.add(offset, kb.mul(group, groupStride)) : offset;
  }
};
} // namespace

void mlir::gated_attention::flash::emitGatedEpilogue(
    const KernelBuilder &kb, const FlashKernelConfig &cfg,
    const LaneLayout &lanes, SoftmaxState state, Value row0,
    const EpilogueOperands &operands) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  bool headwise = cfg.headwiseGate();
  auto gateFn = cast<GateFunctionAttrInterface>(cfg.gate);
  Type f32 = b.getF32Type();
  auto pairType = VectorType::get({2}, cfg.elementType);
  auto f32PairType = VectorType::get({2}, f32);
  AccumulatorTile out = state.out();
  Value g = operands.gate;
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
    Value inv = rowNormalizer(kb, state, half);
    EpilogueRow row(kb, lanes, row0, half, operands.rowGroup);
    auto gateRow = [&] {
      return row.start(kb, operands.gateBase, operands.gateRowStride,
                       operands.gateGroupStride);
    };
    auto outRow = [&] {
      return row.start(kb, operands.outBase, operands.outRowStride,
                       operands.outGroupStride);
    };
    auto ifOp = scf::IfOp::create(b, loc, kb.lt(row.row, operands.numRows));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value headwiseGate;
    if (headwise) {
      Value x = memref::LoadOp::create(b, loc, g, gateRow());
      headwiseGate =
          gateFn.buildActivation(b, loc, arith::ExtFOp::create(b, loc, f32, x));
    }
    // All of the row's gate loads first (one register per column pair):
    // interleaved with the stores to `out`, which may alias `g` as far as
    // LLVM knows, each load's latency would be exposed in turn.
    SmallVector<Value> gatePairs;
    if (cfg.hasGate && !headwise)
      for (int64_t t = 0; t < out.numTiles(); ++t) {
        Value col = kb.add(lanes.columnPair(kb), t * 8);
        Value gi = kb.add(gateRow(), col);
        gatePairs.push_back(
            vector::LoadOp::create(b, loc, pairType, g, ValueRange{gi},
                                   /*nontemporal=*/false, kPairAlignment));
      }
    for (int64_t t = 0; t < out.numTiles(); ++t) {
      Value col = kb.add(lanes.columnPair(kb), t * 8);
      // The activated gate of this lane's two output columns.
      SmallVector<Value, 2> gates;
      if (headwise) {
        gates = {headwiseGate, headwiseGate};
      } else if (cfg.hasGate) {
        Value pair = arith::ExtFOp::create(b, loc, f32PairType, gatePairs[t]);
        for (int64_t c = 0; c < AccumulatorTile::kColumnsPerLane; ++c)
          gates.push_back(gateFn.buildActivation(
              b, loc, vector::ExtractOp::create(b, loc, pair, c)));
      }
      // combine(O / l, gate) per element; the pair is rounded at once.
      SmallVector<Value, 2> y;
      for (int64_t c = 0; c < AccumulatorTile::kColumnsPerLane; ++c) {
        Value yc = kb.fmul(out.at(t, half, c), inv);
        y.push_back(
            cfg.hasGate ? buildCombine(b, loc, cfg.combine, yc, gates[c]) : yc);
      }
      Value packed = arith::TruncFOp::create(
          b, loc, pairType,
          vector::FromElementsOp::create(b, loc, f32PairType, y));
      vector::StoreOp::create(b, loc, packed, operands.out,
                              ValueRange{kb.add(outRow(), col)},
                              /*nontemporal=*/false, kPairAlignment);
    }
  }
}

void mlir::gated_attention::flash::emitPartialEpilogue(
    const KernelBuilder &kb, const LaneLayout &lanes, SoftmaxState state,
    Value row0, const PartialOperands &operands) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto f32PairType = VectorType::get({2}, b.getF32Type());
  AccumulatorTile out = state.out();
  Value negInf = kb.f32c(-std::numeric_limits<double>::infinity());
  Value firstOfQuad = kb.eq(lanes.quadCol, kb.idx(0));
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
    Value l = quadReduce(kb, state.sum(half), /*isMax=*/false);
    Value inv = buildInverseRowSum(b, loc, l);
    // log2 of the row's sum of exp2(scaled scores) over this split's keys
    // (m is their maximum): -inf for a split without a visible key, which
    // the merge weighs 0. A NaN sum stays NaN.
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, kb.f32c(0));
    Value log2Sum = math::Log2Op::create(b, loc, l);
    Value lse = kb.select(empty, negInf, kb.fadd(state.max(half), log2Sum));
    EpilogueRow row(kb, lanes, row0, half, operands.rowGroup);
    auto ifOp = scf::IfOp::create(b, loc, kb.lt(row.row, operands.numRows));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value outRow = row.start(kb, operands.outBase, operands.outRowStride,
                             operands.outGroupStride);
    for (int64_t t = 0; t < out.numTiles(); ++t) {
      SmallVector<Value, 2> y;
      for (int64_t c = 0; c < AccumulatorTile::kColumnsPerLane; ++c)
        y.push_back(kb.fmul(out.at(t, half, c), inv));
      Value pair = vector::FromElementsOp::create(b, loc, f32PairType, y);
      Value col = kb.add(lanes.columnPair(kb), t * 8);
      vector::StoreOp::create(b, loc, pair, operands.out,
                              ValueRange{kb.add(outRow, col)},
                              /*nontemporal=*/false, llvm::Align(8));
    }
    auto store = scf::IfOp::create(b, loc, firstOfQuad);
    b.setInsertionPointToStart(store.thenBlock());
    memref::StoreOp::create(b, loc, lse, operands.lse,
                            row.start(kb, operands.lseBase,
                                      operands.lseRowStride,
                                      operands.lseGroupStride));
  }
}
