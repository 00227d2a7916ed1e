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
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;
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

void mlir::gated_attention::flash::budgetRegistersForLiveState(
    gpu::GPUFuncOp func) {
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                IntegerAttr::get(IntegerType::get(func.getContext(), 32), 1));
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

PackedQueryRows::PackedQueryRows(const KernelBuilder &kb,
                                 const FlashKernelConfig &cfg,
                                 const KernelArguments &args, Value batch,
                                 Value kvHead, Value keyBase)
    : batch(batch), numRows(args["Sq"]), lse(args["lse"]),
      delta(args["delta"]) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  int64_t group = cfg.groupSize();
  firstHead = kb.mul(kvHead, group);
  // The group's heads are consecutive: packed row p is row p / G of the
  // first head's slab, p % G head strides further.
  auto packed = [&](StringRef name, int64_t width) {
    GlobalSlab slab{
        args[name],
        contiguousSlab(kb, batch, firstHead, cfg.numQueryHeads, numRows, width),
        kb.idx(width)};
    if (group > 1) {
      slab.rowGroup = group;
      slab.groupStride = kb.mul(numRows, width);
    }
    return slab;
  };
  query = packed("q", cfg.headDim);
  grad = packed("do", cfg.valueHeadDim);
  numBlocks = arith::CeilDivUIOp::create(b, loc, kb.mul(numRows, group),
                                         kb.idx(cfg.keyBlock));
  firstBlock = kb.idx(0);
  if (!cfg.causal)
    return;
  // Query i sees key j iff j <= i + Skv - Sq: the first key is first seen
  // by query keyBase - (Skv - Sq).
  causalOffset = buildCausalOffset(b, loc, args["Skv"], numRows);
  Value firstQuery =
      arith::MaxSIOp::create(b, loc, kb.sub(keyBase, causalOffset), kb.idx(0));
  firstBlock = kb.div(kb.mul(firstQuery, group), cfg.keyBlock);
}

bool mlir::gated_attention::flash::leanLoopState(const FlashKernelConfig &cfg,
                                                 bool keyValue) {
  if (!keyValue)
    return cfg.columnSplit == 1 && cfg.causal &&
           AccumulatorTile::numRegisters(cfg.headDim) >= 64;
  // A column split's warp keeps its share of dK and dV beside both
  // products.
  int64_t columns = (cfg.headDim + cfg.valueHeadDim) / cfg.columnSplit;
  return AccumulatorTile::numRegisters(columns) +
             2 * AccumulatorTile::numRegisters(cfg.keyBlock) >=
         112;
}

void mlir::gated_attention::flash::transposedScoreGrads(
    const KernelBuilder &kb, const LaneLayout &lanes,
    const FlashKernelConfig &cfg, const PackedQueryRows &rows,
    Value firstColumn, Value keyRow0, AccumulatorTile scores,
    AccumulatorTile gradP, bool firstQueryMask) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  int64_t group = cfg.groupSize();
  Value zero = kb.f32c(0.0);
  Value scaleLog2 = kb.f32c(cfg.scale * M_LOG2E);
  // Causal: key j is visible from query i iff i >= j - (Skv - Sq), so each
  // of the lane's two key rows has a first query, compared with each
  // column's query in 32 bits (both below 2^31 in magnitude): one register
  // a row through the loop instead of the 64-bit key row and offset (the
  // dK/dV kernel at D 64/48 and 48/64 spilled for want of them).
  SmallVector<Value, 2> firstQuery;
  if (cfg.causal && firstQueryMask)
    for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half)
      firstQuery.push_back(
          kb.toI32(kb.sub(lanes.row(kb, keyRow0, half), rows.causalOffset)));
  // Each column is a packed query row: its L and D, and (causal) whether
  // the lane's keys are visible from it.
  for (int64_t t = 0; t < scores.numTiles(); ++t)
    for (int64_t c = 0; c < AccumulatorTile::kColumnsPerLane; ++c) {
      Value packed = kb.add(firstColumn, t * 8 + c);
      Value query = group > 1 ? kb.div(packed, group) : packed;
      Value head = group > 1 ? kb.add(rows.firstHead, kb.rem(packed, group))
                             : rows.firstHead;
      Value valid = kb.lt(query, rows.numRows);
      Value at = kb.add(contiguousSlab(kb, rows.batch, head, cfg.numQueryHeads,
                                       rows.numRows, 1),
                        kb.select(valid, query, kb.idx(0)));
      Value lseLog2 = lseToLog2(
          kb, memref::LoadOp::create(b, loc, rows.lse, ValueRange{at}), valid);
      Value rowDelta = kb.select(
          valid, memref::LoadOp::create(b, loc, rows.delta, ValueRange{at}),
          zero);
      Value keyBound, query32;
      if (cfg.causal && firstQueryMask)
        query32 = kb.toI32(query);
      else if (cfg.causal)
        keyBound = buildCausalKeyBound(b, loc, query, rows.causalOffset);
      for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
        Value &x = scores.at(t, half, c);
        Value p = math::Exp2Op::create(b, loc,
                                       kb.fsub(kb.fmul(x, scaleLog2), lseLog2));
        if (keyBound)
          p = kb.select(kb.lt(lanes.row(kb, keyRow0, half), keyBound), p, zero);
        if (query32) {
          Value visible = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::sge, query32, firstQuery[half]);
          p = kb.select(visible, p, zero);
        }
        x = p;
        gradP.at(t, half, c) = buildScoreGrad(b, loc, p, gradP.at(t, half, c),
                                              rowDelta, cfg.scale);
      }
    }
}

void mlir::gated_attention::flash::scoreGrads(
    const KernelBuilder &kb, AccumulatorTile scores, AccumulatorTile gradP,
    ArrayRef<Value> lseLog2, ArrayRef<Value> delta, double scale) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half)
    scores.forEachInRow(half, [&](int64_t t, int64_t c, Value &x) {
      Value p = math::Exp2Op::create(b, loc, kb.fsub(x, lseLog2[half]));
      x = buildScoreGrad(b, loc, p, gradP.at(t, half, c), delta[half], scale);
    });
}
