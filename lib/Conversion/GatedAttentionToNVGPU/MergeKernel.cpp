//===- MergeKernel.cpp - split-KV decode's merge of partial results -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Split-KV (flash-decoding): the CTAs of one tile each take a part of the
// keys and write the part's softmax-normalized output O_s (f32) and the
// log2 of its sum of exp2(scaled scores), LSE_s. This kernel combines a
// row's parts, O = sum_s 2^(LSE_s - M) O_s / sum_s 2^(LSE_s - M), in one
// online pass over the splits, then applies the gate once: the gate
// belongs to the combined row, not to each part. An op that returns its
// log-sum-exp gets it here, from the combined LSEs.
//
//===----------------------------------------------------------------------===//

#include "FlashKernel.h"
#include "FragmentSoftmax.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

void mlir::gated_attention::flash::buildSplitMergeKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  KernelBuilder kb(b, loc);
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  KernelArguments args(cfg, entry);
  Value gate = args["gate"], out = args["out"], partialOut = args["o_partial"],
        partialLse = args["lse_partial"], numTokens = args["T"],
        splits = args["splits"];
  int64_t hq = cfg.numQueryHeads, dv = cfg.valueHeadDim;
  Type f32 = b.getF32Type();
  auto f32Pair = VectorType::get({2}, f32);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value col = kb.mul(thread, 2);
  Value token = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value row = kb.add(kb.mul(token, hq), head);
  Value rowsPerSplit = kb.mul(numTokens, hq);

  // (m, o0, o1, sum): the running maximum of the LSEs, the weighted pair and
  // the sum of weights, all relative to 2^m.
  Value zero = kb.f32c(0.0);
  SmallVector<Value> init = {kb.f32c(-std::numeric_limits<double>::infinity()),
                             zero, zero, zero};
  auto loop = scf::ForOp::create(b, loc, kb.idx(0), splits, kb.idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange state = loop.getRegionIterArgs();
    Value partRow = kb.add(kb.mul(loop.getInductionVar(), rowsPerSplit), row);
    Value lse = memref::LoadOp::create(b, loc, partialLse, partRow);
    // maximumf, not maxnumf: a NaN part makes the row NaN.
    Value m = arith::MaximumFOp::create(b, loc, state[0], lse);
    Value alpha = buildMergeWeight(b, loc, state[0], m, /*base2=*/true);
    Value weight = buildMergeWeight(b, loc, lse, m, /*base2=*/true);
    Value pair =
        vector::LoadOp::create(b, loc, f32Pair, partialOut,
                               ValueRange{kb.add(kb.mul(partRow, dv), col)});
    SmallVector<Value> next = {m};
    for (int64_t c = 0; c < 2; ++c) {
      Value o = vector::ExtractOp::create(b, loc, pair, c);
      next.push_back(kb.fadd(kb.fmul(state[1 + c], alpha), kb.fmul(weight, o)));
    }
    next.push_back(kb.fadd(kb.fmul(state[3], alpha), weight));
    scf::YieldOp::create(b, loc, next);
  }
  Value inv = buildInverseRowSum(b, loc, loop.getResult(3));
  // The op's log-sum-exp of the row, from the combined log2 LSEs (+inf when
  // no split saw a key): one thread writes it.
  if (cfg.lse) {
    auto first = scf::IfOp::create(b, loc, kb.eq(thread, kb.idx(0)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    memref::StoreOp::create(
        b, loc, rowLogSumExp(kb, loop.getResult(0), loop.getResult(3)),
        args["lse"], row);
  }

  // The gate of the combined row: element pairs, or one per head.
  auto gateFn = cast<GateFunctionAttrInterface>(cfg.gate);
  int64_t dg = cfg.gateWidth;
  Value gateHead = cfg.numGateHeads == 1 ? kb.idx(0) : head;
  Value gateRow = kb.mul(kb.add(kb.mul(token, cfg.numGateHeads), gateHead), dg);
  SmallVector<Value, 2> gates;
  if (cfg.headwiseGate()) {
    Value g = memref::LoadOp::create(b, loc, gate, gateRow);
    Value act =
        gateFn.buildActivation(b, loc, arith::ExtFOp::create(b, loc, f32, g));
    gates = {act, act};
  } else if (cfg.hasGate) {
    Value g =
        vector::LoadOp::create(b, loc, VectorType::get({2}, cfg.elementType),
                               gate, ValueRange{kb.add(gateRow, col)});
    Value pair = arith::ExtFOp::create(b, loc, f32Pair, g);
    for (int64_t c = 0; c < 2; ++c)
      gates.push_back(gateFn.buildActivation(
          b, loc, vector::ExtractOp::create(b, loc, pair, c)));
  }
  SmallVector<Value, 2> y;
  for (int64_t c = 0; c < 2; ++c) {
    Value yc = kb.fmul(loop.getResult(1 + c), inv);
    y.push_back(cfg.hasGate ? buildCombine(b, loc, cfg.combine, yc, gates[c])
                            : yc);
  }
  Value packed = arith::TruncFOp::create(
      b, loc, VectorType::get({2}, cfg.elementType),
      vector::FromElementsOp::create(b, loc, f32Pair, y));
  vector::StoreOp::create(b, loc, packed, out,
                          ValueRange{kb.add(kb.mul(row, dv), col)});
  gpu::ReturnOp::create(b, loc);
}
