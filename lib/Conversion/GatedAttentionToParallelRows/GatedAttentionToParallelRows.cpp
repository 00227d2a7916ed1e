//===- GatedAttentionToParallelRows.cpp - one query row per thread --------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The SIMT form of gated attention: two nested scf.parallel loops over
// (batch, query head, row block) and the rows of a block; each inner
// iteration runs the online softmax for one query row. Mapped to GPU blocks
// and threads by upstream passes, it is the portable GPU path; on the CPU it
// runs through the same pipeline as everything else.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/ConvertAttentionOps.h"
#include "GatedAttention/Conversion/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::gated_attention {
#define GEN_PASS_DEF_CONVERTGATEDATTENTIONTOPARALLELROWSPASS
#include "GatedAttention/Conversion/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
/// Emits the per-row kernel of one attention op.
class RowKernelBuilder {
public:
  RowKernelBuilder(PatternRewriter &b, AttentionOp op, int64_t rowsPerBlock)
      : b(b), op(op), loc(op.getLoc()), f32(b.getF32Type()),
        elementType(op.getQueryType().getElementType()),
        rowsPerBlock(rowsPerBlock) {}

  /// The op's replacements: the result, and the log-sum-exp if asked.
  SmallVector<Value, 2> build();

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32c(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value load(Value memref, ValueRange indices) {
    Value x = memref::LoadOp::create(b, loc, memref, indices);
    return x.getType() == f32 ? x : arith::ExtFOp::create(b, loc, f32, x);
  }
  Value buffer(Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    return bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
        /*readOnly=*/true);
  }
  /// The body for query row `row` of head `head` in batch `batch`.
  void buildRow(Value batch, Value head, Value row);

  PatternRewriter &b;
  AttentionOp op;
  Location loc;
  Type f32, elementType;
  int64_t rowsPerBlock;
  Value q, k, v, g, out, numRows, numKeys;
  /// The log-sum-exp buffer; null when the op does not return it.
  Value lse;
};
} // namespace

void RowKernelBuilder::buildRow(Value batch, Value head, Value row) {
  int64_t d = op.getHeadDim(), dv = op.getValueHeadDim();
  Value zero = idx(0), one = idx(1);
  Value kvHead = arith::DivUIOp::create(b, loc, head, idx(op.getGroupSize()));

  // The query row, scaled, in a private buffer (registers on a GPU).
  auto rowType = [&](int64_t n) { return MemRefType::get({n}, f32); };
  Value qRow = memref::AllocaOp::create(b, loc, rowType(d));
  Value acc = memref::AllocaOp::create(b, loc, rowType(dv));
  Value scale = f32c(op.getScaleValue());
  scf::ForOp::create(b, loc, zero, idx(d), one, ValueRange{},
                     [&](OpBuilder &nb, Location, Value e, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nb.getInsertionBlock(),
                                           nb.getInsertionPoint());
                       Value x = load(q, {batch, head, row, e});
                       Value s = arith::MulFOp::create(b, loc, x, scale);
                       memref::StoreOp::create(b, loc, s, qRow, e);
                       scf::YieldOp::create(b, loc);
                     });
  scf::ForOp::create(b, loc, zero, idx(dv), one, ValueRange{},
                     [&](OpBuilder &nb, Location, Value e, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nb.getInsertionBlock(),
                                           nb.getInsertionPoint());
                       memref::StoreOp::create(b, loc, f32c(0.0), acc, e);
                       scf::YieldOp::create(b, loc);
                     });

  // Keys [0, end): all of them, or under the causal mask those up to the
  // diagonal, i <= j + (Skv - Sq); the loop bound is the mask.
  Value end = numKeys;
  if (op.getCausal()) {
    Value last = buildCausalKeyBound(
        b, loc, row, buildCausalOffset(b, loc, numKeys, numRows));
    last = arith::MaxSIOp::create(b, loc, last, zero);
    end = arith::MinSIOp::create(b, loc, last, numKeys);
  }
  double negInf = -std::numeric_limits<double>::infinity();
  auto keyLoop = scf::ForOp::create(
      b, loc, zero, end, one, ValueRange{f32c(negInf), f32c(0.0)},
      [&](OpBuilder &nb, Location, Value j, ValueRange ml) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        auto dot = scf::ForOp::create(
            b, loc, zero, idx(d), one, ValueRange{f32c(0.0)},
            [&](OpBuilder &nb2, Location, Value e, ValueRange sum) {
              OpBuilder::InsertionGuard guard2(b);
              b.setInsertionPoint(nb2.getInsertionBlock(),
                                  nb2.getInsertionPoint());
              Value x = memref::LoadOp::create(b, loc, qRow, e);
              Value y = load(k, {batch, kvHead, j, e});
              Value p = arith::MulFOp::create(b, loc, x, y);
              scf::YieldOp::create(
                  b, loc, ValueRange{arith::AddFOp::create(b, loc, sum[0], p)});
            });
        Value s = dot.getResult(0);
        // m' = max(m, s) is finite (s is); exp(-inf - m') = 0 on the first
        // key.
        Value mNew = arith::MaximumFOp::create(b, loc, ml[0], s);
        Value alpha = math::ExpOp::create(
            b, loc, arith::SubFOp::create(b, loc, ml[0], mNew));
        Value p =
            math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, mNew));
        Value lNew = arith::AddFOp::create(
            b, loc, arith::MulFOp::create(b, loc, ml[1], alpha), p);
        scf::ForOp::create(b, loc, zero, idx(dv), one, ValueRange{},
                           [&](OpBuilder &nb2, Location, Value e, ValueRange) {
                             OpBuilder::InsertionGuard guard2(b);
                             b.setInsertionPoint(nb2.getInsertionBlock(),
                                                 nb2.getInsertionPoint());
                             Value a = memref::LoadOp::create(b, loc, acc, e);
                             Value pv = arith::MulFOp::create(
                                 b, loc, p, load(v, {batch, kvHead, j, e}));
                             Value updated = arith::AddFOp::create(
                                 b, loc,
                                 arith::MulFOp::create(b, loc, a, alpha), pv);
                             memref::StoreOp::create(b, loc, updated, acc, e);
                             scf::YieldOp::create(b, loc);
                           });
        scf::YieldOp::create(b, loc, ValueRange{mNew, lNew});
      });

  // Epilogue: combine(acc / l, act(G)), 0 / l = 0 for a row without keys.
  Value l = keyLoop.getResult(1);
  // The weights were exp(s - m) (m = -inf, l = 0 in a row without keys).
  if (lse)
    memref::StoreOp::create(
        b, loc,
        buildLogSumExp(b, loc, buildSoftmaxShift(b, loc, keyLoop.getResult(0)),
                       l),
        lse, ValueRange{batch, head, row});
  Value inv = buildInverseRowSum(b, loc, l);
  Value gateHead = op.isGateShared() ? zero : head;
  auto gateFn = op.getGate();
  CombineKind combine = op.getCombine();
  bool headwise = op.isGateHeadwise();
  scf::ForOp::create(
      b, loc, zero, idx(dv), one, ValueRange{},
      [&](OpBuilder &nb, Location, Value e, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value y = arith::MulFOp::create(
            b, loc, memref::LoadOp::create(b, loc, acc, e), inv);
        Value gv =
            g ? load(g, {batch, gateHead, row, headwise ? zero : e}) : Value();
        Value r = buildGatedOutput(b, loc, y, gv, gateFn, combine, elementType);
        memref::StoreOp::create(b, loc, r, out,
                                ValueRange{batch, head, row, e});
        scf::YieldOp::create(b, loc);
      });
}

SmallVector<Value, 2> RowKernelBuilder::build() {
  q = buffer(op.getQuery());
  k = buffer(op.getKey());
  v = buffer(op.getValue());
  if (op.hasGate())
    g = buffer(op.getGateInput());
  Value zero = idx(0), one = idx(1);
  Value numBatches = memref::DimOp::create(b, loc, q, 0);
  numRows = memref::DimOp::create(b, loc, q, 2);
  numKeys = memref::DimOp::create(b, loc, k, 2);

  RankedTensorType resultType = op.getResultType();
  out = allocateResultBuffer(b, op, numBatches, numRows);
  if (op.hasLse())
    lse = allocateResultBuffer(b, loc,
                               cast<RankedTensorType>(op.getLse().getType()),
                               numBatches, numRows);

  Value blocks = arith::CeilDivUIOp::create(b, loc, numRows, idx(rowsPerBlock));
  scf::ParallelOp::create(
      b, loc, ValueRange{zero, zero, zero},
      ValueRange{numBatches, idx(op.getNumQueryHeads()), blocks},
      ValueRange{one, one, one},
      [&](OpBuilder &nb, Location, ValueRange outer) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        scf::ParallelOp::create(
            b, loc, ValueRange{zero}, ValueRange{idx(rowsPerBlock)},
            ValueRange{one}, [&](OpBuilder &nb2, Location, ValueRange inner) {
              OpBuilder::InsertionGuard guard2(b);
              b.setInsertionPoint(nb2.getInsertionBlock(),
                                  nb2.getInsertionPoint());
              Value row = arith::AddIOp::create(
                  b, loc,
                  arith::MulIOp::create(b, loc, outer[2], idx(rowsPerBlock)),
                  inner[0]);
              Value inRange = arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::ult, row, numRows);
              scf::IfOp::create(b, loc, inRange, [&](OpBuilder &nb3, Location) {
                OpBuilder::InsertionGuard guard3(b);
                b.setInsertionPoint(nb3.getInsertionBlock(),
                                    nb3.getInsertionPoint());
                buildRow(outer[0], outer[1], row);
                scf::YieldOp::create(b, loc);
              });
            });
      });
  SmallVector<Value, 2> results = {bufferization::ToTensorOp::create(
      b, loc, resultType, out, /*restrict=*/true, /*writable=*/true)};
  if (lse)
    results.push_back(bufferization::ToTensorOp::create(
        b, loc, op.getLse().getType(), lse, /*restrict=*/true,
        /*writable=*/true));
  return results;
}

namespace {
struct AttentionToParallelRows : OpRewritePattern<AttentionOp> {
  AttentionToParallelRows(MLIRContext *ctx, int64_t rowsPerBlock)
      : OpRewritePattern(ctx), rowsPerBlock(rowsPerBlock) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       RowKernelBuilder(rewriter, op, rowsPerBlock).build());
    return success();
  }

  int64_t rowsPerBlock;
};

struct ConvertGatedAttentionToParallelRowsPass
    : gated_attention::impl::ConvertGatedAttentionToParallelRowsPassBase<
          ConvertGatedAttentionToParallelRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (rowsPerBlock <= 0) {
      getOperation()->emitError("rows-per-block must be positive");
      return signalPassFailure();
    }
    // The row kernel computes in f32: f64 inputs would silently lose their
    // precision.
    WalkResult wide = getOperation()->walk([](AttentionOp op) {
      if (!needsWideAccumulator(op.getQueryType().getElementType()))
        return WalkResult::advance();
      op.emitError("no GPU lowering of f64 attention: the GPU kernels "
                   "compute in f32; f64 lowers on the CPU "
                   "(--gated-attention-to-llvm, the reference lowering)");
      return WalkResult::interrupt();
    });
    if (wide.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateGatedAttentionToParallelRowsPatterns(patterns, rowsPerBlock);
    if (failed(convertAttentionOps(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::gated_attention::populateGatedAttentionToParallelRowsPatterns(
    RewritePatternSet &patterns, int64_t rowsPerBlock) {
  patterns.add<AttentionToParallelRows>(patterns.getContext(), rowsPerBlock);
}
