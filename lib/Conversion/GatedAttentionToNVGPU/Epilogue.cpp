//===- Epilogue.cpp - the gated output of the flash kernels ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include <cmath>
#include <limits>

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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

/// tanh(x) on the MUFU unit: LLVM's tanh with approximate functions allowed
/// (afn), which NVPTX selects as tanh.approx.f32 (one instruction, relative
/// error at most 2^-11 by the PTX ISA 9.1, section 9.7.3.22;
/// gated_attention.accuracy's TANH_APPROX_ERROR).
static Value fastTanh(const KernelBuilder &kb, Value x) {
  return LLVM::TanhOp::create(
      kb.builder(), kb.location(), x,
      LLVM::FastmathFlagsAttr::get(kb.builder().getContext(),
                                   LLVM::FastmathFlags::afn));
}

/// Whether the fast epilogue folds a sigmoid gate that multiplies into O's
/// normalization: y = (O / 2l)(1 + t).
static bool foldsSigmoid(const FlashKernelConfig &cfg) {
  auto kind = dyn_cast<GateKindAttr>(cfg.gate);
  return cfg.hasGate && kind && kind.getValue() == GateKind::sigmoid &&
         cfg.combine == CombineKind::mul;
}

Value mlir::gated_attention::flash::normalizedRowScale(
    const KernelBuilder &kb, const FlashKernelConfig &cfg, SoftmaxState state,
    int64_t half) {
  Value l = quadReduce(kb, state.sum(half), /*isMax=*/false);
  Value empty = arith::CmpFOp::create(
      kb.builder(), kb.location(), arith::CmpFPredicate::OEQ, l, kb.f32c(0.0));
  Value norm = kb.select(empty, kb.f32c(1.0), l);
  // 2 l is exact.
  return fastReciprocal(kb, foldsSigmoid(cfg) ? kb.fadd(norm, norm) : norm);
}

namespace {
/// How the epilogue turns O, l and the gate into the output. Accurate:
/// 1 / l by IEEE division and the gate attribute's own activation. Fast
/// (the sm_90a kernel): O arrives as k O / l (normalizedRowScale), and the
/// built-in gates come from t = tanh.approx(g / 2), sigmoid(g) =
/// (1 + t) / 2: sigmoid 0.5 + 0.5 t, SiLU (g / 2)(1 + t), NS-sigmoid
/// 0.75 + 0.25 t, one FFMA each. The halving is exact, so it is done on the
/// loaded pair of 16-bit gates, one packed multiply for two. A sigmoid gate
/// that multiplies (k = 1/2) is y = o + o t, one FFMA. A plugin gate keeps
/// its own activation. docs/Design.md derives the error bound.
class OutputMath {
public:
  OutputMath(const KernelBuilder &kb, const FlashKernelConfig &cfg, bool fast)
      : kb(kb), cfg(cfg), fast(fast),
        kind(fast ? dyn_cast<GateKindAttr>(cfg.gate) : GateKindAttr()),
        folded(fast && foldsSigmoid(cfg)) {}

  /// Starts row half `half`: returns its sum l reduced over the quad.
  Value startRow(SoftmaxState state, int64_t half) {
    Value l = quadReduce(kb, state.sum(half), /*isMax=*/false);
    if (!fast)
      inv = buildInverseRowSum(kb.builder(), kb.location(), l);
    return l;
  }

  /// Whether gate() takes g / 2 rather than g.
  bool takesHalf() const { return static_cast<bool>(kind); }

  /// The pair of elementwise gates as gate() takes them: halved, in the
  /// element type, where takesHalf().
  Value preparePair(Value pair) const {
    if (!takesHalf())
      return pair;
    auto type = cast<VectorType>(pair.getType());
    Value half = arith::ConstantOp::create(
        kb.builder(), kb.location(),
        DenseElementsAttr::get(
            type, FloatAttr::get(type.getElementType(), 0.5).getValue()));
    return arith::MulFOp::create(kb.builder(), kb.location(), pair, half);
  }

  /// A gate that is one value per row (headwise), in f32: activated once.
  void setRowGate(Value g) {
    if (takesHalf())
      g = kb.fmul(g, kb.f32c(0.5));
    // Folded: (O / 2l)(1 + t).
    rowGate = folded ? kb.fadd(kb.f32c(1.0), fastTanh(kb, g)) : activate(g);
  }

  /// What output() takes of an elementwise gate value `g` (g / 2 where
  /// takesHalf()): its activation, or (folded) t.
  Value gate(Value g) const { return folded ? fastTanh(kb, g) : activate(g); }

  /// The output element of accumulator `o` and gate() of its elementwise
  /// gate `a` (null: none, or headwise).
  Value output(Value o, Value a = {}) const {
    if (folded)
      return a ? fma(o, a, o) : kb.fmul(o, rowGate);
    Value y = fast ? o : kb.fmul(o, inv);
    if (!cfg.hasGate)
      return y;
    return buildCombine(kb.builder(), kb.location(), cfg.combine, y,
                        a ? a : rowGate);
  }

private:
  Value fma(Value x, Value y, Value z) const {
    return LLVM::FMAOp::create(kb.builder(), kb.location(), x, y, z);
  }
  /// The activation of g (g / 2 for the built-in gates).
  Value activate(Value g) const {
    OpBuilder &b = kb.builder();
    if (!kind)
      return cast<GateFunctionAttrInterface>(cfg.gate).buildActivation(
          b, kb.location(), g);
    Value t = fastTanh(kb, g);
    switch (kind.getValue()) {
    case GateKind::sigmoid:
      return fma(t, kb.f32c(0.5), kb.f32c(0.5));
    case GateKind::silu:
      return fma(g, t, g);
    case GateKind::ns_sigmoid:
      return fma(t, kb.f32c(0.25), kb.f32c(0.75));
    }
    llvm_unreachable("unknown gate kind");
  }

  const KernelBuilder &kb;
  const FlashKernelConfig &cfg;
  bool fast;
  GateKindAttr kind;
  bool folded;
  /// Per row: 1 / l (accurate), the headwise activation (folded: 1 + t).
  Value inv, rowGate;
};
} // namespace

/// The two f32 values of a pair of 16-bit gates. `bits` (the fast
/// epilogue): a bf16 is the high half of an f32, one shift or one mask of
/// the pair's 32 bits each (a vector extf extracts the high half first, one
/// instruction more).
static std::pair<Value, Value> unpackPair(const KernelBuilder &kb, Value pair,
                                          bool bits) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Type f32 = b.getF32Type();
  auto type = cast<VectorType>(pair.getType());
  if (!bits || !type.getElementType().isBF16()) {
    Value wide = arith::ExtFOp::create(b, loc, VectorType::get({2}, f32), pair);
    return {vector::ExtractOp::create(b, loc, wide, 0),
            vector::ExtractOp::create(b, loc, wide, 1)};
  }
  Type i32 = b.getI32Type();
  Value word = vector::ExtractOp::create(
      b, loc,
      vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair), 0);
  auto constant = [&](uint32_t v) {
    return arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
  };
  Value low = arith::ShLIOp::create(b, loc, word, constant(16));
  Value high = arith::AndIOp::create(b, loc, word, constant(0xFFFF0000u));
  return {arith::BitcastOp::create(b, loc, f32, low),
          arith::BitcastOp::create(b, loc, f32, high)};
}

/// Stores `value` at `index` of `buffer` from the lane where `firstOfQuad`
/// holds: after the quad's reduction its four lanes hold the same row
/// values, and one store a row suffices.
static void storeFromQuad(const KernelBuilder &kb, Value firstOfQuad,
                          Value value, Value buffer, Value index) {
  OpBuilder &b = kb.builder();
  OpBuilder::InsertionGuard guard(b);
  auto store = scf::IfOp::create(b, kb.location(), firstOfQuad);
  b.setInsertionPointToStart(store.thenBlock());
  memref::StoreOp::create(b, kb.location(), value, buffer, index);
}

void mlir::gated_attention::flash::emitGatedEpilogue(
    const KernelBuilder &kb, const FlashKernelConfig &cfg,
    const LaneLayout &lanes, SoftmaxState state, Value row0,
    const EpilogueOperands &operands, bool fast) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  bool headwise = cfg.headwiseGate();
  Type f32 = b.getF32Type();
  auto pairType = VectorType::get({2}, cfg.elementType);
  auto f32PairType = VectorType::get({2}, f32);
  AccumulatorTile out = state.out();
  Value g = operands.gate;
  OutputMath math(kb, cfg, fast);
  Value firstOfQuad = operands.lse ? kb.eq(lanes.quadCol, kb.idx(0)) : Value();
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
    Value l = math.startRow(state, half);
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
    if (operands.lse)
      storeFromQuad(
          kb, firstOfQuad, rowLogSumExp(kb, state.max(half), l), operands.lse,
          row.start(kb, operands.lseBase, kb.idx(1), operands.lseGroupStride));
    if (headwise) {
      Value x = memref::LoadOp::create(b, loc, g, gateRow());
      math.setRowGate(arith::ExtFOp::create(b, loc, f32, x));
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
      // The gate of this lane's two output columns.
      SmallVector<Value, 2> gates;
      if (!gatePairs.empty()) {
        auto [g0, g1] = unpackPair(kb, math.preparePair(gatePairs[t]), fast);
        gates = {math.gate(g0), math.gate(g1)};
      }
      // combine(O / l, gate) per element; the pair is rounded at once.
      SmallVector<Value, 2> y;
      for (int64_t c = 0; c < AccumulatorTile::kColumnsPerLane; ++c)
        y.push_back(math.output(out.at(t, half, c),
                                gates.empty() ? Value() : gates[c]));
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
    storeFromQuad(kb, firstOfQuad, lse, operands.lse,
                  row.start(kb, operands.lseBase, operands.lseRowStride,
                            operands.lseGroupStride));
  }
}
