//===- BackwardPreprocessKernel.cpp - D, dY and dG of the backward --------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The backward's first kernel (BackwardKernels.h): a thread per query row
// s of batch b and gate head hg, over the query heads that read that gate
// (hg itself, or every head for a shared gate). It reads only the saved
// gated output, never Y (the pattern leaves gates that need Y to other
// lowerings: backwardRecomputesOutput):
//   D[b, h, s]     = sum_e dOut * out                    (f32)
//   dY[b, h, s, e] = dOut * act(G)                        (element type)
//   dG[b, hg, s, e] = sum over those heads (and over e for a headwise
//                    gate) of dOut * out * act'/act(G)    (element type)
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class PreprocessKernel : public KernelBuilder {
public:
  PreprocessKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg), f32(b.getF32Type()) {}

  void build(gpu::GPUFuncOp func);

private:
  Value load(Value buffer, Value i) {
    Value x = memref::LoadOp::create(b, loc, buffer, ValueRange{i});
    return arith::ExtFOp::create(b, loc, f32, x);
  }
  void store(Value x, Value buffer, Value i) {
    Value t = arith::TruncFOp::create(b, loc, cfg.elementType, x);
    memref::StoreOp::create(b, loc, t, buffer, ValueRange{i});
  }
  /// The element of query head `h`'s row at column `e`, in out and dOut.
  Value rowElement(Value h, Value e) {
    Value slab = contiguousSlab(*this, batch, h, cfg.numQueryHeads, numRows,
                                cfg.valueHeadDim);
    return add(add(slab, mul(row, cfg.valueHeadDim)), e);
  }
  /// The gate's element for column `e` (its only one when headwise).
  Value gateElement(Value e) {
    Value slab = contiguousSlab(*this, batch, gateHead, cfg.numGateHeads,
                                numRows, cfg.gateWidth);
    return add(add(slab, mul(row, cfg.gateWidth)),
               cfg.gateWidth == 1 ? idx(0) : e);
  }
  /// Builds `body(i, acc)` for i in [0, n), carrying one f32 sum from 0.
  Value sumLoop(int64_t n, function_ref<Value(Value, Value)> body) {
    auto loop = scf::ForOp::create(b, loc, idx(0), idx(n), idx(1),
                                   ValueRange{f32c(0.0)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value next = body(loop.getInductionVar(), loop.getRegionIterArgs().front());
    scf::YieldOp::create(b, loc, next);
    return loop.getResult(0);
  }
  /// The query heads that read gate head `gateHead`: the i-th is
  /// gateHead * headsPerGate + i.
  Value headOf(Value i) { return add(mul(gateHead, headsPerGate), i); }

  const FlashKernelConfig &cfg;
  Type f32;
  int64_t headsPerGate = 1;
  Value batch, gateHead, row, numRows;
};
} // namespace

void PreprocessKernel::build(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  KernelArguments args(cfg, entry);
  numRows = args["Sq"];
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  row = add(mul(block, cfg.threads()), thread);
  gateHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  headsPerGate = cfg.numQueryHeads / cfg.numGateHeads;
  auto active = scf::IfOp::create(b, loc, lt(row, numRows));
  b.setInsertionPointToStart(active.thenBlock());
  Value out = args["out"], dout = args["dout"], gate = args["gate"];
  auto gateFn = dyn_cast<GateFunctionAttrInterface>(cfg.gate);
  int64_t dv = cfg.valueHeadDim;

  // D and dY, head by head.
  auto heads = scf::ForOp::create(b, loc, idx(0), idx(headsPerGate), idx(1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(heads.getBody());
    Value h = headOf(heads.getInductionVar());
    Value delta = sumLoop(dv, [&](Value e, Value acc) {
      Value at = rowElement(h, e);
      Value dOut = load(dout, at);
      if (cfg.hasGate) {
        Value act = gateFn.buildActivation(b, loc, load(gate, gateElement(e)));
        store(buildAttentionOutputGrad(b, loc, cfg.combine, dOut, act),
              args["do"], at);
      }
      return fadd(acc, fmul(dOut, load(out, at)));
    });
    Value rowAt = add(
        contiguousSlab(*this, batch, h, cfg.numQueryHeads, numRows, 1), row);
    memref::StoreOp::create(b, loc, delta, args["delta"], ValueRange{rowAt});
  }
  if (!cfg.hasGate) {
    b.setInsertionPointAfter(active);
    gpu::ReturnOp::create(b, loc);
    return;
  }

  // dG: each gate element sums its terms over the heads that read it and,
  // headwise, over the row's columns.
  auto derivative = cast<GateDerivativeAttrInterface>(cfg.gate);
  int64_t columnsPerGate = cfg.gateWidth == 1 ? dv : 1;
  auto gateColumns =
      scf::ForOp::create(b, loc, idx(0), idx(cfg.gateWidth), idx(1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(gateColumns.getBody());
    Value ge = gateColumns.getInductionVar();
    Value gateAt = gateElement(ge);
    Value g = load(gate, gateAt);
    Value grad = sumLoop(headsPerGate, [&](Value i, Value acc) {
      Value h = headOf(i);
      Value headSum = sumLoop(columnsPerGate, [&](Value c, Value inner) {
        Value at = rowElement(h, cfg.gateWidth == 1 ? c : ge);
        Value term = buildGateGrad(b, loc, derivative, cfg.combine, g,
                                   load(dout, at), Value(), load(out, at));
        return fadd(inner, term);
      });
      return fadd(acc, headSum);
    });
    store(grad, args["dg"], gateAt);
  }
  b.setInsertionPointAfter(active);
  gpu::ReturnOp::create(b, loc);
}

void mlir::gated_attention::flash::buildBackwardPreprocessKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  PreprocessKernel(b, loc, cfg).build(func);
}
