//===- FragmentSoftmax.cpp - online softmax on accumulator tiles ----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "FragmentSoftmax.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

static constexpr double kNegInf = -std::numeric_limits<double>::infinity();

SmallVector<Value> SoftmaxState::init(const KernelBuilder &kb,
                                      int64_t valueHeadDim) {
  SmallVector<Value> values = {kb.f32c(kNegInf), kb.f32c(kNegInf), kb.f32c(0.0),
                               kb.f32c(0.0)};
  values.append(AccumulatorTile::numRegisters(valueHeadDim), kb.f32c(0.0));
  return values;
}

Value mlir::gated_attention::flash::fastExp2(const KernelBuilder &kb, Value x) {
  return LLVM::CallIntrinsicOp::create(
             kb.builder(), kb.location(), kb.builder().getF32Type(),
             kb.builder().getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
             ValueRange{x})
      .getResult(0);
}

Value mlir::gated_attention::flash::fastReciprocal(const KernelBuilder &kb,
                                                   Value x) {
  return NVVM::RcpApproxFtzF32Op::create(kb.builder(), kb.location(),
                                         kb.builder().getF32Type(), x);
}

void mlir::gated_attention::flash::scaleAndMaskScores(
    const KernelBuilder &kb, AccumulatorTile scores,
    std::optional<double> scale, Value firstKey, ArrayRef<Value> keyLimits) {
  Value scaleLog2 = scale ? kb.f32c(*scale * M_LOG2E) : Value();
  Value negInf = kb.f32c(kNegInf);
  for (int64_t t = 0; t < scores.numTiles(); ++t)
    for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half)
      for (int64_t c = 0; c < AccumulatorTile::kColumnsPerLane; ++c) {
        Value &x = scores.at(t, half, c);
        if (scaleLog2)
          x = kb.fmul(x, scaleLog2);
        if (!keyLimits.empty()) {
          Value key = firstKey ? kb.add(firstKey, t * 8 + c)
                               : arith::ConstantOp::create(
                                     kb.builder(), kb.location(),
                                     kb.builder().getI32IntegerAttr(t * 8 + c));
          x = kb.select(kb.lt(key, keyLimits[half]), x, negInf);
        }
      }
}

void mlir::gated_attention::flash::rescaleRow(const KernelBuilder &kb,
                                              AccumulatorTile out, int64_t half,
                                              Value alpha) {
  out.forEachInRow(half,
                   [&](int64_t, int64_t, Value &o) { o = kb.fmul(o, alpha); });
}

SmallVector<Value, 2> mlir::gated_attention::flash::updateSoftmax(
    const KernelBuilder &kb, AccumulatorTile scores,
    std::optional<double> rawScale, SoftmaxState state, bool rescaleOut) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value zero = kb.f32c(0.0);
  // Raw scores stay raw until their exponent: the maximum of raw scores is
  // the maximum of scaled ones (scale > 0), and exp2(s * scale log2(e) - m)
  // is one FFMA and one MUFU.EX2 (fastExp2) per score. Scaled scores take
  // libdevice's exp2f: FADD, then four instructions.
  Value scaleLog2 = rawScale ? kb.f32c(*rawScale * M_LOG2E) : Value();
  auto exp2 = [&](Value x) -> Value {
    return rawScale ? fastExp2(kb, x) : math::Exp2Op::create(b, loc, x);
  };
  AccumulatorTile out = state.out();
  SmallVector<Value, 2> alphas;
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
    Value rowMax = kb.f32c(kNegInf);
    scores.forEachInRow(
        half, [&](int64_t, int64_t, Value &x) { rowMax = kb.fmax(rowMax, x); });
    rowMax = quadReduce(kb, rowMax, /*isMax=*/true);
    Value &m = state.max(half);
    Value &l = state.sum(half);
    Value mNew = kb.fmax(m, scaleLog2 ? kb.fmul(rowMax, scaleLog2) : rowMax);
    Value shift = buildSoftmaxShift(b, loc, mNew);
    Value negShift = scaleLog2 ? arith::NegFOp::create(b, loc, shift) : Value();
    Value alpha = exp2(kb.fsub(m, shift));
    Value rowSum = zero;
    scores.forEachInRow(half, [&](int64_t, int64_t, Value &x) {
      x = exp2(
          scaleLog2
              ? LLVM::FMAOp::create(b, loc, x, scaleLog2, negShift).getResult()
              : kb.fsub(x, shift));
      rowSum = kb.fadd(rowSum, x);
    });
    l = kb.fadd(kb.fmul(l, alpha), rowSum);
    m = mNew;
    alphas.push_back(alpha);
    if (rescaleOut)
      rescaleRow(kb, out, half, alpha);
  }
  return alphas;
}

SmallVector<Value, 2> mlir::gated_attention::flash::softmaxStep(
    const KernelBuilder &kb, const LaneLayout &lanes,
    const KeyBlockRange &range, Value warpRow, Value block, int64_t keyBlock,
    double scale, bool masked, AccumulatorTile scores, SoftmaxState state,
    bool fast, bool rescaleOut, bool relativeMask) {
  // Masked blocks hold keys past Skv or above the causal diagonal.
  Value firstKey;
  SmallVector<Value, 2> keyLimits;
  if (masked && relativeMask) {
    // Each row's bound relative to the lane's first key, in i32 (keys, rows
    // and bounds are below 2^31 in magnitude), once per row: each score is
    // then one compare with a constant, where a 64-bit key and bound took
    // an add and two compares (and their registers).
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value first = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, kb.toI32(block),
            arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(keyBlock))),
        kb.toI32(lanes.columnPair(kb)));
    for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
      Value limit = kb.toI32(range.keyLimit(kb, lanes.row(kb, warpRow, half)));
      keyLimits.push_back(arith::SubIOp::create(b, loc, limit, first));
    }
  } else {
    firstKey = kb.add(kb.mul(block, keyBlock), lanes.columnPair(kb));
    if (masked)
      for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half)
        keyLimits.push_back(range.keyLimit(kb, lanes.row(kb, warpRow, half)));
  }
  // Fast: the scale goes into each score's exponent.
  scaleAndMaskScores(kb, scores, fast ? std::nullopt : std::optional(scale),
                     firstKey, keyLimits);
  return updateSoftmax(kb, scores, fast ? std::optional(scale) : std::nullopt,
                       state, rescaleOut);
}

Value mlir::gated_attention::flash::rowLogSumExp(const KernelBuilder &kb,
                                                 Value max, Value sum) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value shift = kb.fmul(buildSoftmaxShift(b, loc, max), kb.f32c(M_LN2));
  return buildLogSumExp(b, loc, shift, sum);
}

Value mlir::gated_attention::flash::rowNormalizer(const KernelBuilder &kb,
                                                  SoftmaxState state,
                                                  int64_t half) {
  Value l = quadReduce(kb, state.sum(half), /*isMax=*/false);
  return buildInverseRowSum(kb.builder(), kb.location(), l);
}
