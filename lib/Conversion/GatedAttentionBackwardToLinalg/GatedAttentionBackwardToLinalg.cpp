//===- GatedAttentionBackwardToLinalg.cpp - reference backward ------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The reference lowering of the backward: plain linalg.generic ops on
// tensors that materialize the weights P and the score gradients dS, in the
// layout of the forward's reference lowering ([B, Hkv, R, Sq, ...], so key
// and value are read through indexing maps and dK, dV sum over each GQA
// group as a reduction). Written to be obviously right; the fused
// FlashAttention-2-shaped lowerings are tested against it.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionBackwardToLinalg/GatedAttentionBackwardToLinalg.h"
#include "GatedAttention/Conversion/ConvertAttentionOps.h"
#include "GatedAttention/Conversion/Passes.h"
#include "GatedAttention/Conversion/ReferenceWeights.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionBackwardMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_CONVERTGATEDATTENTIONBACKWARDTOLINALGPASS
#include "GatedAttention/Conversion/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
using utils::IteratorType;
using BodyBuilder = function_ref<void(OpBuilder &, Location, ValueRange)>;

void yield(OpBuilder &b, Location loc, Value value) {
  linalg::YieldOp::create(b, loc, value);
}

/// Builds the reference form of one backward op.
class BackwardBuilder {
public:
  BackwardBuilder(AttentionBackwardOp op, PatternRewriter &b)
      : op(op), b(b), loc(op.getLoc()),
        elementType(op.getQueryType().getElementType()),
        accumulator(getAccumulatorType(elementType)) {}

  SmallVector<Value> build();

private:
  /// Extends a loaded element to the accumulator type.
  Value toAcc(OpBuilder &nb, Location nl, Value x) {
    return extendTo(nb, nl, accumulator, x);
  }
  Value accConstant(OpBuilder &nb, Location nl, double v) {
    return arith::ConstantOp::create(nb, nl, nb.getFloatAttr(accumulator, v));
  }
  Value empty(ArrayRef<OpFoldResult> sizes, Type type) {
    return tensor::EmptyOp::create(b, loc, sizes, type);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double init) {
    return filledTensor(b, loc, sizes, accumulator, init);
  }
  AffineMap map(unsigned numDims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(numDims, 0, results, b.getContext());
  }
  /// A linalg.generic with one result into `init`; a loop dim is a
  /// reduction iff the init's map does not use it.
  Value generic(Value init, ValueRange inputs, ArrayRef<AffineMap> maps,
                BodyBuilder body) {
    AffineMap initMap = maps.back();
    SmallVector<IteratorType> iterators(initMap.getNumDims(),
                                        IteratorType::reduction);
    for (AffineExpr e : initMap.getResults())
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        iterators[dim.getPosition()] = IteratorType::parallel;
    return linalg::GenericOp::create(b, loc, TypeRange{init.getType()}, inputs,
                                     ValueRange{init}, maps, iterators, body)
        .getResult(0);
  }
  /// A new tensor of `sizes` x `type` for a gradient: an alloc_tensor,
  /// which CSE never merges with another. Two gradients accumulated into
  /// one shared zero-filled tensor.empty (dK and dV when D = Dv) came out
  /// wrong once empty-tensor elimination had put that init into one of
  /// their destinations; a tensor of its own costs a copy.
  Value gradient(ArrayRef<OpFoldResult> sizes, Type type) {
    SmallVector<int64_t> shape;
    SmallVector<Value> dynamicSizes;
    dispatchIndexOpFoldResults(sizes, dynamicSizes, shape);
    return bufferization::AllocTensorOp::create(
        b, loc, RankedTensorType::get(shape, type), dynamicSizes);
  }
  Value zeroGradient(ArrayRef<OpFoldResult> sizes) {
    return linalg::FillOp::create(b, loc, accConstant(b, loc, 0.0),
                                  gradient(sizes, accumulator))
        .getResult(0);
  }
  /// sum_k a * b into a zero-filled accumulator-type tensor of `sizes` (a
  /// gradient's own, with `own`).
  Value contract(ArrayRef<OpFoldResult> sizes, Value lhs, Value rhs,
                 ArrayRef<AffineMap> maps, bool own = false) {
    return generic(
        own ? zeroGradient(sizes) : filled(sizes, 0.0), {lhs, rhs}, maps,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value prod = arith::MulFOp::create(nb, nl, toAcc(nb, nl, args[0]),
                                             toAcc(nb, nl, args[1]));
          yield(nb, nl, arith::AddFOp::create(nb, nl, args[2], prod));
        });
  }
  /// An accumulator-type tensor rounded to the element type, once.
  Value rounded(Value t, ArrayRef<OpFoldResult> sizes) {
    if (elementType == accumulator)
      return t;
    unsigned rank = cast<RankedTensorType>(t.getType()).getRank();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
    Type type = elementType;
    return generic(gradient(sizes, elementType), {t}, {id, id},
                   [&](OpBuilder &nb, Location nl, ValueRange args) {
                     yield(nb, nl,
                           arith::TruncFOp::create(nb, nl, type, args[0]));
                   });
  }
  Value splitHeads(Value t) {
    return splitQueryHeads(b, loc, t, op.getNumKVHeads(), op.getGroupSize());
  }
  /// `t` as `type` (a tensor.cast where only static sizes differ).
  Value castTo(Value t, Type type) {
    if (t.getType() == type)
      return t;
    return tensor::CastOp::create(b, loc, type, t);
  }
  Value gateGrad(Value dout5, Value out5, Value y, AffineMap gateMap,
                 Value gate);

  AttentionBackwardOp op;
  PatternRewriter &b;
  Location loc;
  Type elementType;
  /// Sums, weights and score gradients: f32, or f64 for f64 inputs.
  Type accumulator;
};
} // namespace

/// dG: the elementwise gradient over (b, kh, r, i, e), summed into the
/// gate's layout (over e for a headwise gate, over the heads kh, r for a
/// shared one) in the accumulator type, rounded once and reshaped to the gate's
/// type.
Value BackwardBuilder::gateGrad(Value dout5, Value out5, Value y,
                                AffineMap gateMap, Value gate) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  Value gateInput = op.getGateInput();
  bool shared = op.isGateShared(), headwise = op.isGateHeadwise();
  OpFoldResult batch = tensor::getMixedSize(b, loc, gateInput, 0);
  OpFoldResult sq = tensor::getMixedSize(b, loc, gateInput, 2);
  SmallVector<AffineExpr> dims;
  SmallVector<OpFoldResult> sizes;
  dims.push_back(d0);
  sizes.push_back(batch);
  if (!shared) {
    dims.append({d1, d2});
    sizes.append({b.getIndexAttr(op.getNumKVHeads()),
                  b.getIndexAttr(op.getGroupSize())});
  }
  dims.push_back(d3);
  sizes.push_back(sq);
  if (!headwise) {
    dims.push_back(d4);
    sizes.push_back(b.getIndexAttr(op.getValueHeadDim()));
  }

  auto derivative = cast<GateDerivativeAttrInterface>(op.getGate());
  CombineKind combine = op.getCombine();
  AffineMap id5 = map(5, {d0, d1, d2, d3, d4});
  SmallVector<Value> inputs = {dout5, gate, y ? y : out5};
  SmallVector<AffineMap> maps = {id5, gateMap, id5, map(5, dims)};
  bool fromOutput = !y;
  Value sum =
      generic(zeroGradient(sizes), inputs, maps,
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value dOut = toAcc(nb, nl, args[0]), g = toAcc(nb, nl, args[1]),
                      z = toAcc(nb, nl, args[2]);
                Value grad = buildGateGrad(nb, nl, derivative, combine, g, dOut,
                                           fromOutput ? Value() : z,
                                           fromOutput ? z : Value());
                yield(nb, nl, arith::AddFOp::create(nb, nl, args[3], grad));
              });
  Value result = rounded(sum, sizes);

  // To the gate's [B, Hg, Sq, Dg]: merge (kh, r) into Hq, add unit dims.
  RankedTensorType gateType = op.getGateType();
  auto target = RankedTensorType::get(gateType.getShape(), elementType);
  SmallVector<OpFoldResult> targetSizes =
      tensor::getMixedSizes(b, loc, gateInput);
  if (!shared) {
    SmallVector<ReassociationIndices> merge =
        headwise ? SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}}
                 : SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}};
    result = tensor::CollapseShapeOp::create(b, loc, result, merge);
    if (headwise)
      result = tensor::ExpandShapeOp::create(
          b, loc, target, result,
          ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}}, targetSizes);
  } else {
    SmallVector<ReassociationIndices> unit =
        headwise ? SmallVector<ReassociationIndices>{{0, 1}, {2, 3}}
                 : SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}};
    result = tensor::ExpandShapeOp::create(b, loc, target, result, unit,
                                           targetSizes);
  }
  return castTo(result, gateType);
}

SmallVector<Value> BackwardBuilder::build() {
  MLIRContext *ctx = b.getContext();
  Value query = op.getQuery(), key = op.getKey(), value = op.getValue(),
        gate = op.getGateInput();
  int64_t hkv = op.getNumKVHeads(), r = op.getGroupSize(), d = op.getHeadDim(),
          dv = op.getValueHeadDim();

  OpFoldResult batch = tensor::getMixedSize(b, loc, query, 0);
  OpFoldResult sq = tensor::getMixedSize(b, loc, query, 2);
  OpFoldResult skv = tensor::getMixedSize(b, loc, key, 2);
  SmallVector<OpFoldResult> rowSizes = {batch, b.getIndexAttr(hkv),
                                        b.getIndexAttr(r), sq};
  auto extend = [&](ArrayRef<OpFoldResult> sizes, OpFoldResult last) {
    SmallVector<OpFoldResult> result = llvm::to_vector(sizes);
    result.push_back(last);
    return result;
  };
  SmallVector<OpFoldResult> scoreSizes = extend(rowSizes, skv);
  SmallVector<OpFoldResult> outSizes = extend(rowSizes, b.getIndexAttr(dv));
  SmallVector<OpFoldResult> querySizes = extend(rowSizes, b.getIndexAttr(d));
  SmallVector<OpFoldResult> keySizes = {batch, b.getIndexAttr(hkv), skv,
                                        b.getIndexAttr(d)};
  SmallVector<OpFoldResult> valueSizes = {batch, b.getIndexAttr(hkv), skv,
                                          b.getIndexAttr(dv)};

  Value q5 = splitHeads(query);
  Value out5 = splitHeads(op.getOutput());
  Value dout5 = splitHeads(op.getOutputGrad());

  AffineExpr d0, d1, d2, d3, d4, d5;
  bindDims(ctx, d0, d1, d2, d3, d4, d5);
  AffineMap id5 = map(5, {d0, d1, d2, d3, d4});
  AffineMap row5 = map(5, {d0, d1, d2, d3});
  AffineMap out6 = map(6, {d0, d1, d2, d3, d4});

  // The forward's weights, normalized: P = exp(s - m) / l, 0 for a masked
  // key and in a row that sees none (AttentionMath's rules); with the
  // forward's log-sum-exp L, P = exp(s - L) (L = +inf in a row that sees
  // none), and the row max and sum are not needed.
  double scale = op.getScaleValue();
  ReferenceWeights weights = buildReferenceWeights(b, loc, q5, key, rowSizes,
                                                   skv, op.getCausal(), scale);
  Value probs;
  if (op.hasLse())
    probs = generic(
        empty(scoreSizes, accumulator),
        {weights.logits, splitHeads(op.getLse())}, {id5, row5, id5},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          yield(nb, nl,
                math::ExpOp::create(
                    nb, nl, arith::SubFOp::create(nb, nl, args[0], args[1])));
        });
  else
    probs = generic(
        empty(scoreSizes, accumulator), {weights.exps, weights.rowSum},
        {id5, row5, id5}, [&](OpBuilder &nb, Location nl, ValueRange args) {
          yield(nb, nl,
                arith::MulFOp::create(nb, nl, args[0],
                                      buildInverseRowSum(nb, nl, args[1])));
        });

  // The gate over (b, kh, r, i, e): per query head (split like the query)
  // or shared (head 0), elementwise (channel e) or headwise (channel 0).
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  AffineExpr channel = op.isGateHeadwise() ? zero : d4;
  Value gate5;
  AffineMap gateMap;
  if (op.hasGate() && op.isGateShared()) {
    gate5 = gate;
    gateMap = map(5, {d0, zero, d3, channel});
  } else if (op.hasGate()) {
    gate5 = splitHeads(gate);
    gateMap = map(5, {d0, d1, d2, d3, channel});
  }
  CombineKind combine = op.getCombine();
  GateFunctionAttrInterface activation = op.getGate();

  // dY = dOut * act(G) (mul) or dOut (add, no gate).
  SmallVector<Value> dyInputs = {dout5};
  SmallVector<AffineMap> dyMaps = {id5};
  if (gate5) {
    dyInputs.push_back(gate5);
    dyMaps.push_back(gateMap);
  }
  dyMaps.push_back(id5);
  Value dy = generic(
      empty(outSizes, accumulator), dyInputs, dyMaps,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value act;
        if (args.size() == 3)
          act = activation.buildActivation(nb, nl, toAcc(nb, nl, args[1]));
        yield(nb, nl,
              buildAttentionOutputGrad(nb, nl, combine, toAcc(nb, nl, args[0]),
                                       act));
      });

  // The ungated output where the saved one does not give what is needed
  // (AttentionBackwardMath: SiLU, add), and D = rowsum(dY * Y), from it or
  // as rowsum(dOut * out).
  Value y;
  if (backwardRecomputesOutput(
          op.hasGate() ? Attribute(activation) : Attribute(), combine))
    y = contract(
        outSizes, probs, value,
        {map(6, {d0, d1, d2, d3, d5}), map(6, {d0, d1, d5, d4}), out6});
  Value delta = y ? contract(rowSizes, dy, y, {id5, id5, row5})
                  : contract(rowSizes, dout5, out5, {id5, id5, row5});

  SmallVector<Value> results;
  // dS = scale * P * (dY V^T - D).
  Value dp =
      contract(scoreSizes, dy, value,
               {map(6, {d0, d1, d2, d3, d5}), map(6, {d0, d1, d4, d5}), out6});
  Value ds = generic(
      empty(scoreSizes, accumulator), {probs, dp, delta}, {id5, id5, row5, id5},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yield(nb, nl, buildScoreGrad(nb, nl, args[0], args[1], args[2], scale));
      });

  // dQ = dS K, per query head.
  Value dq5 =
      contract(querySizes, ds, key,
               {map(6, {d0, d1, d2, d3, d5}), map(6, {d0, d1, d5, d4}), out6},
               /*own=*/true);
  Value dq = tensor::CollapseShapeOp::create(
      b, loc, rounded(dq5, querySizes),
      ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
  results.push_back(castTo(dq, op.getQueryType()));

  // dK = dS^T Q and dV = P^T dY, summed over the group's query heads r and
  // the rows i: loops (b, kh, j, c, r, i).
  AffineMap kv6 = map(6, {d0, d1, d2, d3});
  Value dk = contract(
      keySizes, ds, q5,
      {map(6, {d0, d1, d4, d5, d2}), map(6, {d0, d1, d4, d5, d3}), kv6},
      /*own=*/true);
  results.push_back(castTo(rounded(dk, keySizes), op.getKeyType()));
  Value dvGrad = contract(
      valueSizes, probs, dy,
      {map(6, {d0, d1, d4, d5, d2}), map(6, {d0, d1, d4, d5, d3}), kv6},
      /*own=*/true);
  results.push_back(castTo(rounded(dvGrad, valueSizes), op.getValueType()));

  if (gate5)
    results.push_back(gateGrad(dout5, out5, y, gateMap, gate5));
  return results;
}

namespace {
struct AttentionBackwardToLinalgPattern
    : OpRewritePattern<AttentionBackwardOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionBackwardOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, BackwardBuilder(op, rewriter).build());
    return success();
  }
};

struct ConvertGatedAttentionBackwardToLinalgPass
    : gated_attention::impl::ConvertGatedAttentionBackwardToLinalgPassBase<
          ConvertGatedAttentionBackwardToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGatedAttentionBackwardToLinalgPatterns(patterns);
    if (failed(convertAttentionOps<AttentionBackwardOp>(
            getOperation(), std::move(patterns), wideOnly)))
      signalPassFailure();
  }
};
} // namespace

void mlir::gated_attention::populateGatedAttentionBackwardToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionBackwardToLinalgPattern>(patterns.getContext());
}
