//===- BackwardPreprocessKernel.cpp - D, dY and dG of the backward --------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The backward's first kernel (BackwardKernels.h), for query rows s of
// batch b and gate head hg, over the query heads that read that gate (hg
// itself, or every head for a shared gate). It reads only the saved gated
// output, never Y (the pattern leaves gates that need Y to other
// lowerings: backwardRecomputesOutput):
//   D[b, h, s]     = sum_e dOut * out                    (f32)
//   dY[b, h, s, e] = dOut * act(G)                        (element type)
//   dG[b, hg, s, e] = sum over those heads (and over e for a headwise
//                    gate) of dOut * out * act'/act(G)    (element type)
//
// It only moves memory, so it is laid out for coalescing
// (PreprocessLanes): the lanes of a row each take 8 consecutive columns in
// one 16-byte load or store, so that a warp's access covers whole rows,
// every sector used. Row sums (D, a headwise dG) add a lane's 8 products,
// then the row's lanes by xor shuffles. A lane past the row's columns, or
// of a row past Sq, reads a valid row (the last) and contributes 0: the
// shuffles need every lane of the warp, so no lane branches around them.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

PreprocessLanes::PreprocessLanes(const FlashKernelConfig &cfg)
    : headsPerBlock(cfg.hasGate ? cfg.numQueryHeads / cfg.numGateHeads : 1),
      chunks(cfg.valueHeadDim / kElements),
      lanesPerRow(static_cast<int64_t>(llvm::PowerOf2Ceil(chunks))),
      rowsPerBlock(cfg.threads() / lanesPerRow) {
  assert(cfg.valueHeadDim % kElements == 0 && lanesPerRow <= 32 &&
         "the backward takes Dv a multiple of 16 up to 256");
}

namespace {
/// The 16-byte accesses of dOut, out, dY and an elementwise gate and dG.
const llvm::Align kVectorAlignment(16);

class PreprocessKernel : public KernelBuilder {
public:
  PreprocessKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg), lanes(cfg), f32(b.getF32Type()),
        vectorType(
            VectorType::get({PreprocessLanes::kElements}, cfg.elementType)),
        f32Vector(VectorType::get({PreprocessLanes::kElements}, f32)) {}

  void build(gpu::GPUFuncOp func);

private:
  /// The lane's 8 elements of `buffer` from `i`, in f32.
  Value loadVector(Value buffer, Value i) {
    Value x = vector::LoadOp::create(b, loc, vectorType, buffer, ValueRange{i},
                                     /*nontemporal=*/false, kVectorAlignment);
    return arith::ExtFOp::create(b, loc, f32Vector, x);
  }
  /// Rounds the lane's 8 f32 `x` to the element type and stores them at
  /// `i`, where the lane holds columns of a row.
  void storeVector(Value x, Value buffer, Value i) {
    Value t = arith::TruncFOp::create(b, loc, vectorType, x);
    whenValid(valid, [&] {
      vector::StoreOp::create(b, loc, t, buffer, ValueRange{i},
                              /*nontemporal=*/false, kVectorAlignment);
    });
  }
  /// Builds `body` under `condition`.
  void whenValid(Value condition, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b, loc, condition);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }
  /// The row's sum of the lanes' f32 vectors `x`: each lane's 8 elements
  /// pairwise, then the row's lanes by xor shuffles; in every lane.
  Value rowSum(Value x) {
    SmallVector<Value, 8> parts;
    for (int64_t i = 0; i < PreprocessLanes::kElements; ++i)
      parts.push_back(vector::ExtractOp::create(b, loc, x, i));
    while (parts.size() > 1) {
      for (size_t i = 0; i < parts.size() / 2; ++i)
        parts[i] = fadd(parts[2 * i], parts[2 * i + 1]);
      parts.resize(parts.size() / 2);
    }
    // A lane past the row's columns reads the last chunk again: not in the
    // sum.
    Value sum = parts.front();
    if (lanes.chunks != lanes.lanesPerRow)
      sum = select(chunkValid, sum, f32c(0.0));
    for (int32_t offset = 1; offset < lanes.lanesPerRow; offset *= 2) {
      Value other =
          gpu::ShuffleOp::create(b, loc, sum, offset, 32, gpu::ShuffleMode::XOR)
              .getShuffleResult();
      sum = fadd(sum, other);
    }
    return sum;
  }
  /// Stores the f32 `x`, rounded to `buffer`'s element type, at `i` from
  /// the first lane of a row below Sq.
  void storeRowScalar(Value x, Value buffer, Value i) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    Value t = element == f32 ? x : arith::TruncFOp::create(b, loc, element, x);
    whenValid(firstLaneOfRow, [&] {
      memref::StoreOp::create(b, loc, t, buffer, ValueRange{i});
    });
  }
  /// The first element of the lane's columns in query head `h`'s row, in
  /// out, dOut and dY.
  Value rowElement(Value h) {
    Value slab = contiguousSlab(*this, batch, h, cfg.numQueryHeads, numRows,
                                cfg.valueHeadDim);
    return add(add(slab, mul(readRow, cfg.valueHeadDim)), column);
  }
  /// The gate's element for the lane's first column (its only one when
  /// headwise).
  Value gateElement() {
    Value slab = contiguousSlab(*this, batch, gateHead, cfg.numGateHeads,
                                numRows, cfg.gateWidth);
    return add(add(slab, mul(readRow, cfg.gateWidth)),
               cfg.gateWidth == 1 ? idx(0) : column);
  }
  /// The query heads that read gate head `gateHead`: the i-th is
  /// gateHead * headsPerGate + i.
  Value headOf(Value i) { return add(mul(gateHead, headsPerGate), i); }

  const FlashKernelConfig &cfg;
  PreprocessLanes lanes;
  Type f32;
  VectorType vectorType, f32Vector;
  int64_t headsPerGate = 1;
  Value batch, gateHead, row, numRows;
  /// The row the lane reads (row, or the last one past Sq) and the first
  /// of its columns (the last chunk's past Dv).
  Value readRow, column;
  /// Whether the lane's row is below Sq and its columns within Dv; whether
  /// its columns are within Dv; whether it is its valid row's first lane.
  Value valid, chunkValid, firstLaneOfRow;
};
} // namespace

void PreprocessKernel::build(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  KernelArguments args(cfg, entry);
  numRows = args["Sq"];
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value chunk = rem(thread, lanes.lanesPerRow);
  row = add(mul(block, lanes.rowsPerBlock), div(thread, lanes.lanesPerRow));
  gateHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  // (Without a gate, a CTA row per head: PreprocessLanes::headsPerBlock.)
  headsPerGate = lanes.headsPerBlock;
  // (The launch has Sq > 0: the last row exists.)
  Value rowValid = lt(row, numRows);
  readRow = min(row, sub(numRows, 1));
  valid = rowValid;
  column = mul(chunk, int64_t(PreprocessLanes::kElements));
  if (lanes.chunks != lanes.lanesPerRow) {
    chunkValid = lt(chunk, idx(lanes.chunks));
    column = mul(min(chunk, idx(lanes.chunks - 1)),
                 int64_t(PreprocessLanes::kElements));
    valid = arith::AndIOp::create(b, loc, rowValid, chunkValid);
  }
  firstLaneOfRow = arith::AndIOp::create(b, loc, rowValid, eq(chunk, idx(0)));
  Value out = args["out"], dout = args["dout"], gate = args["gate"];
  auto gateFn = dyn_cast_if_present<GateFunctionAttrInterface>(cfg.gate);
  auto derivative = dyn_cast_if_present<GateDerivativeAttrInterface>(cfg.gate);

  // The gate's 8 elements (a headwise gate's one, broadcast), read once for
  // the heads that share it.
  Value g, act;
  if (cfg.hasGate) {
    Value at = gateElement();
    if (cfg.gateWidth == 1) {
      Value x = memref::LoadOp::create(b, loc, gate, ValueRange{at});
      g = vector::BroadcastOp::create(b, loc, f32Vector,
                                      arith::ExtFOp::create(b, loc, f32, x));
    } else {
      g = loadVector(gate, at);
    }
    act = gateFn.buildActivation(b, loc, g);
  }

  // Head by head: D and dY, and the head's terms of dG added to the
  // lane's (one pass over dOut and out).
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(f32Vector, b.getF32FloatAttr(0.0)));
  auto heads = scf::ForOp::create(b, loc, idx(0), idx(headsPerGate), idx(1),
                                  ValueRange{zero});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(heads.getBody());
    Value h = headOf(heads.getInductionVar());
    Value at = rowElement(h);
    Value dOut = loadVector(dout, at);
    Value o = loadVector(out, at);
    Value gradG = heads.getRegionIterArgs().front();
    if (cfg.hasGate) {
      storeVector(buildAttentionOutputGrad(b, loc, cfg.combine, dOut, act),
                  args["do"], at);
      Value term =
          buildGateGrad(b, loc, derivative, cfg.combine, g, dOut, Value(), o);
      // (0 + term is not folded: it would turn -0 into +0.)
      gradG = headsPerGate == 1 ? term : fadd(gradG, term);
    }
    Value delta = rowSum(arith::MulFOp::create(b, loc, dOut, o));
    Value rowAt = add(
        contiguousSlab(*this, batch, h, cfg.numQueryHeads, numRows, 1), row);
    storeRowScalar(delta, args["delta"], rowAt);
    scf::YieldOp::create(b, loc, gradG);
  }
  if (cfg.hasGate) {
    // dG: each gate element sums its terms over the heads that read it
    // and, headwise, over the row's columns.
    Value gradG = heads.getResult(0);
    Value gateAt = gateElement();
    if (cfg.gateWidth == 1)
      storeRowScalar(rowSum(gradG), args["dg"], gateAt);
    else
      storeVector(gradG, args["dg"], gateAt);
  }
  gpu::ReturnOp::create(b, loc);
}

void mlir::gated_attention::flash::buildBackwardPreprocessKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  PreprocessKernel(b, loc, cfg).build(func);
}
