//===- Epilogue.cpp - the gated output of the flash kernels ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/Epilogue.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

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
    Value row = lanes.row(kb, row0, half);
    // Packed heads: the sequence's row and the head's offset in it.
    Value group;
    if (operands.rowGroup > 1) {
      group = kb.rem(row, operands.rowGroup);
      row = kb.div(row, operands.rowGroup);
    }
    auto start = [&](Value base, Value rowStride, int64_t groupStride) {
      Value offset = kb.add(base, kb.mul(row, rowStride));
      return group ? kb.add(offset, kb.mul(group, groupStride)) : offset;
    };
    auto gateRow = [&] {
      return start(operands.gateBase, operands.gateRowStride,
                   operands.gateGroupStride);
    };
    auto outRow = [&] {
      return start(operands.outBase, operands.outRowStride,
                   operands.outGroupStride);
    };
    auto ifOp = scf::IfOp::create(b, loc, kb.lt(row, operands.numRows));
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
