//===- Epilogue.cpp - the gated output of the flash kernels ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "TmaPipeline.h"

#include <cmath>
#include <limits>

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
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

namespace {
/// A warp's 16 output rows staged in shared memory from `base` as they lie
/// in global memory (rows of `width` bytes, back to back): stmatrix writes
/// 8 x 8 blocks into them, and one bulk copy moves the rows below Sq out.
/// The 8 rows of a block share their banks (8 wavefronts a block, as many
/// as the 8 rows of each 32-bit store of the register path), and no
/// swizzle can spread them: a 1-D bulk copy needs the rows contiguous, and
/// the consumer's freed Q rows leave no room to pad them.
class StagedRows {
public:
  static constexpr int64_t kRows = 16, kChunkBytes = 16;

  StagedRows(const KernelBuilder &kb, Value base, Value lane, int64_t width)
      : kb(kb), base(base), lane(lane), width(width) {}

  /// Writes tiles 2p and 2p + 1 (both row halves: packed pairs `words`, in
  /// the order a0 a1 b0 b1) with one stmatrix.x4. Lanes 8m..8m + 7 address
  /// the rows of block m: rows 8 (m % 2).., tile 2p + m / 2.
  void store(int64_t p, ArrayRef<Value> words) {
    OpBuilder &b = kb.builder();
    NVVM::StMatrixOp::create(
        b, kb.location(), blocks(p), words, NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
  }

  /// The pairs of tiles 2p and 2p + 1 (a0 a1 b0 b1, as store() takes them)
  /// with one ldmatrix.x4: the accumulator's layout for 16-bit data.
  SmallVector<Value, 4> load(int64_t p) {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Type i32 = b.getI32Type();
    Type type =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32, i32, i32});
    Value x4 = NVVM::LdMatrixOp::create(
        b, loc, type, blocks(p), /*num=*/4, NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
    SmallVector<Value, 4> words;
    for (int64_t i = 0; i < 4; ++i)
      words.push_back(LLVM::ExtractValueOp::create(b, loc, x4, i));
    return words;
  }

  /// Lane 0 copies the rows below `numRows` - `row0` from `global` +
  /// `start` bytes (one bulk copy, completing the phase of parity `parity`,
  /// an i32, of the mbarrier `bar`; null: 0, a fresh barrier's); every lane
  /// waits for them.
  void copyIn(Value global, Value start, Value row0, Value numRows, Value bar,
              Value parity) {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value size = rowBytes(row0, numRows);
    Value first = kb.eq(lane, kb.idx(0));
    {
      auto ifOp = scf::IfOp::create(b, loc, first);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      // The arrival completes the phase at once where there is nothing to
      // copy (a warp past Sq).
      NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar, size,
                                             /*scope=*/nullptr,
                                             /*relaxed=*/nullptr, Value());
    }
    {
      // Its own branch, not nested in the arrival's: there ptxas issued it
      // in a loop over the lanes' operands (2 instructions more).
      Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, size,
                                        i32(0));
      auto copy =
          scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, first, any));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(copy.thenBlock());
      // To shared::cluster, this CTA's window (the shared::cta form needs
      // PTX 8.6).
      auto cluster = LLVM::LLVMPointerType::get(
          b.getContext(),
          static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
      Value dst = LLVM::AddrSpaceCastOp::create(b, loc, cluster, base);
      NVVM::CpAsyncBulkGlobalToSharedClusterOp::create(
          b, loc, dst, offsetBy(global, start), bar, size,
          /*multicastMask=*/Value(), /*l2CacheHint=*/Value());
    }
    NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parity ? parity : i32(0),
                                          i32(10000000));
  }

  /// Copies the rows below `numRows` - `row0` to `global` + `start` bytes,
  /// from lane 0, and waits until the copy has read them (the rows are the
  /// consumer's Q tile, which the kernel's exit frees).
  void copyOut(Value global, Value start, Value row0, Value numRows) {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    // Each lane's stmatrix writes (generic proxy) before lane 0's bulk
    // copy reads them (async proxy).
    NVVM::FenceProxyOp::create(
        b, loc,
        NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
    NVVM::SyncWarpOp::create(
        b, loc, arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(-1)));
    Value size = rowBytes(row0, numRows);
    Value copies = arith::AndIOp::create(
        b, loc, kb.eq(lane, kb.idx(0)),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, size, i32(0)));
    {
      auto ifOp = scf::IfOp::create(b, loc, copies);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      NVVM::CpAsyncBulkSharedCTAToGlobalOp::create(
          b, loc, offsetBy(global, start), base, size,
          /*l2CacheHint=*/Value(), /*byteMask=*/Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
    NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, /*group=*/0,
                                         /*read=*/b.getUnitAttr());
  }

private:
  Value i32(int64_t v) const {
    return arith::ConstantOp::create(kb.builder(), kb.location(),
                                     kb.builder().getI32IntegerAttr(v));
  }
  /// The bytes of the warp's rows below numRows (none past it), in i32:
  /// numRows - row0 may be negative.
  Value rowBytes(Value row0, Value numRows) const {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value left =
        arith::SubIOp::create(b, loc, kb.toI32(numRows), kb.toI32(row0));
    Value rows = arith::MaxSIOp::create(
        b, loc, arith::MinSIOp::create(b, loc, left, i32(kRows)), i32(0));
    return arith::MulIOp::create(b, loc, rows, i32(width));
  }
  /// `global` advanced by `bytes` (index).
  Value offsetBy(Value global, Value bytes) const {
    OpBuilder &b = kb.builder();
    Value wide =
        arith::IndexCastOp::create(b, kb.location(), b.getI64Type(), bytes);
    return LLVM::GEPOp::create(b, kb.location(), global.getType(),
                               b.getI8Type(), global, ValueRange{wide});
  }
  /// The lane's row of the 8 x 8 blocks of tiles 2p and 2p + 1.
  Value blocks(int64_t p) {
    if (!laneOffset) {
      Value m = kb.div(lane, 8);
      Value row = kb.add(kb.mul(kb.rem(m, 2), 8), kb.rem(lane, 8));
      laneOffset = kb.add(kb.mul(row, width), kb.mul(kb.div(m, 2), 16));
    }
    return at(kb.add(laneOffset, 2 * p * kChunkBytes));
  }
  Value at(Value offset) const {
    OpBuilder &b = kb.builder();
    Value bytes = kb.toI32(offset);
    return LLVM::GEPOp::create(b, kb.location(), base.getType(), b.getI8Type(),
                               base, ValueRange{bytes});
  }

  const KernelBuilder &kb;
  Value base, lane;
  int64_t width;
  /// The lane's stmatrix row address for p = 0.
  Value laneOffset;
};
} // namespace

/// 32 bits from ldmatrix as a pair of 16-bit elements.
static Value pairOfWord(const KernelBuilder &kb, Value word, Type pairType) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value vec = vector::FromElementsOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), ValueRange{word});
  return vector::BitCastOp::create(b, loc, pairType, vec);
}

/// A pair of output elements as the 32 bits stmatrix takes.
static Value pairWord(const KernelBuilder &kb, Value pair) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, word, 0);
}

void mlir::gated_attention::flash::emitGatedEpilogue(
    const KernelBuilder &kb, const FlashKernelConfig &cfg,
    const LaneLayout &lanes, SoftmaxState state, Value row0,
    const EpilogueOperands &operands, bool fast) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  bool headwise = cfg.headwiseGate();
  bool staged = static_cast<bool>(operands.staging);
  Type f32 = b.getF32Type();
  auto pairType = VectorType::get({2}, cfg.elementType);
  auto f32PairType = VectorType::get({2}, f32);
  AccumulatorTile out = state.out();
  Value g = operands.gate;
  OutputMath math(kb, cfg, fast);
  Value firstOfQuad = operands.lse ? kb.eq(lanes.quadCol, kb.idx(0)) : Value();
  // Staged: the packed output pairs of each row half, by tile.
  SmallVector<SmallVector<Value>, 2> words(AccumulatorTile::kRowsPerLane);
  int64_t width = out.numTiles() * StagedRows::kChunkBytes;
  std::optional<StagedRows> rows;
  if (staged)
    rows.emplace(kb, operands.staging, lanes.lane, width);
  // The output pair of tile t in row half `half` (its gate pair `gatePair`
  // where elementwise), rounded at once.
  auto outputPair = [&](int64_t t, int64_t half, Value gatePair) {
    SmallVector<Value, 2> gates;
    if (gatePair) {
      auto [g0, g1] = unpackPair(kb, math.preparePair(gatePair), fast);
      gates = {math.gate(g0), math.gate(g1)};
    }
    // combine(O / l, gate) per element.
    SmallVector<Value, 2> y;
    for (int64_t c = 0; c < AccumulatorTile::kColumnsPerLane; ++c)
      y.push_back(
          math.output(out.at(t, half, c), gates.empty() ? Value() : gates[c]));
    return arith::TruncFOp::create(
        b, loc, pairType,
        vector::FromElementsOp::create(b, loc, f32PairType, y));
  };
  // Staged gate rows: one bulk copy, waited for before any row's math.
  if (operands.gateBarrier)
    rows->copyIn(
        globalBufferPointer(kb, g),
        kb.mul(kb.add(operands.gateBase, kb.mul(row0, operands.gateRowStride)),
               cfg.elementBytes()),
        row0, operands.numRows, operands.gateBarrier, operands.gateParity);
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
    Value l = math.startRow(state, half);
    EpilogueRow row(kb, lanes, row0, half, operands.rowGroup);
    auto outRow = [&] {
      return row.start(kb, operands.outBase, operands.outRowStride,
                       operands.outGroupStride);
    };
    Value inBounds = kb.lt(row.row, operands.numRows);
    auto lseStore = [&] {
      storeFromQuad(
          kb, firstOfQuad, rowLogSumExp(kb, state.max(half), l), operands.lse,
          row.start(kb, operands.lseBase, kb.idx(1), operands.lseGroupStride));
    };
    // Staged, every lane computes both its rows (stmatrix is the warp's):
    // one past Sq reads the gate of row Sq - 1, and is not copied out.
    Value gateRowIndex = row.row;
    OpBuilder::InsertionGuard guard(b);
    if (staged) {
      if (operands.lse) {
        auto ifOp = scf::IfOp::create(b, loc, inBounds);
        OpBuilder::InsertionGuard lseGuard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        lseStore();
      }
      // Staged gate rows: the math follows, block by block.
      if (operands.gateBarrier)
        continue;
      gateRowIndex = kb.min(row.row, kb.sub(operands.numRows, 1));
    } else {
      auto ifOp = scf::IfOp::create(b, loc, inBounds);
      b.setInsertionPointToStart(ifOp.thenBlock());
      if (operands.lse)
        lseStore();
    }
    auto gateRow = [&] {
      EpilogueRow at = row;
      at.row = gateRowIndex;
      return at.start(kb, operands.gateBase, operands.gateRowStride,
                      operands.gateGroupStride);
    };
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
      Value packed =
          outputPair(t, half, gatePairs.empty() ? Value() : gatePairs[t]);
      if (staged)
        words[half].push_back(pairWord(kb, packed));
      else
        vector::StoreOp::create(b, loc, packed, operands.out,
                                ValueRange{kb.add(outRow(), col)},
                                /*nontemporal=*/false, kPairAlignment);
    }
  }
  if (!staged)
    return;
  // Blocks of tiles 2p and 2p + 1, both halves: a0 a1 b0 b1. With staged
  // gate rows each block's output overwrites its gate, read just before
  // (no more than 4 gate pairs live).
  for (int64_t p = 0; p < out.numTiles() / 2; ++p) {
    SmallVector<Value, 4> x4;
    if (operands.gateBarrier) {
      for (auto [i, word] : llvm::enumerate(rows->load(p)))
        x4.push_back(pairWord(kb, outputPair(2 * p + i / 2, i % 2,
                                             pairOfWord(kb, word, pairType))));
    } else {
      x4 = {words[0][2 * p], words[1][2 * p], words[0][2 * p + 1],
            words[1][2 * p + 1]};
    }
    rows->store(p, x4);
  }
  // The warp's rows are contiguous (stagesOutput): one run from row0's.
  rows->copyOut(
      globalBufferPointer(kb, operands.out),
      kb.mul(kb.add(operands.outBase, kb.mul(row0, operands.outRowStride)),
             cfg.elementBytes()),
      row0, operands.numRows);
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
