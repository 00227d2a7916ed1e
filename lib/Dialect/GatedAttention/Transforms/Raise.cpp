//===- Raise.cpp - unfused gated attention in linalg to the op ------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Finds gated attention written out in linalg on tensors, the way frontend
// lowerings write it, and replaces it by gated_attention.attention:
//
//   S = Q Kᵀ               batched contraction (named or generic; Kᵀ read
//                          through the map or made by linalg.transpose)
//   S = S * c | S / c      optional elementwise scale by a constant
//   S = mask(S)            optional causal mask: select on linalg.index
//   P = softmax(S)         linalg.softmax, or max / exp(x - max) / sum / div
//   O = P V                batched contraction
//   Y = O * act(G) | O + act(G)
//                          elementwise; act = sigmoid / silu / ns_sigmoid
//                          spelled with negf, exp, addf, divf, ...
//
// Heads are either their own dimension ([B, H, S, D]) or folded into the
// batch ([B * H, S, D]); grouped-query K and V may be repeated by a
// broadcast + collapse_shape, which is looked through (the op reads the
// Hkv heads). The attention is raised first, without a gate, from its P V
// contraction upwards; a gate combine using its result is folded in after.
// Any mismatch leaves the IR untouched. The matchers are pure and live in
// Utils/RaiseMatchers.h; this file builds the op and drives the patterns.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"
#include "RaiseBuilders.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <optional>

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONRAISEPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

//===----------------------------------------------------------------------===//
// Building the op
//===----------------------------------------------------------------------===//

/// `v` as [B, H, S, D] (see as4D), expanded when it has no 4-D source.
static Value materialize4D(OpBuilder &b, Location loc, Value v) {
  auto [lifted, type] = as4D(v);
  if (lifted)
    return lifted;
  return tensor::ExpandShapeOp::create(
      b, loc, type, v, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// Whether `v` is a tensor with an encoding (a sparse one): the op takes
/// dense tensors only.
static bool hasEncoding(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getEncoding();
}

/// Whether `rootType` is the op's `resultType` [B, H, S, D] or its
/// [B·H, S, D] collapse.
static bool fitsResult(RankedTensorType resultType, Type rootType) {
  if (rootType == resultType)
    return true;
  int64_t b = resultType.getDimSize(0), h = resultType.getDimSize(1);
  return rootType ==
         RankedTensorType::get(
             {ShapedType::isDynamic(b) ? ShapedType::kDynamic : b * h,
              resultType.getDimSize(2), resultType.getDimSize(3)},
             resultType.getElementType());
}

/// `v` (the op's result) reshaped to `type` (4-D as is, or its 3-D collapse).
static Value reshapeResult(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CollapseShapeOp::create(
      b, loc, type, v, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// Replaces `root` (of 3-D or 4-D attention shape) by the ungated op
/// computing `chain`; fails without changing the IR when the shapes do not
/// fit the op.
static LogicalResult replaceByAttention(PatternRewriter &rewriter,
                                        Operation *root,
                                        const AttentionChain &chain) {
  // K/V heads: a GQA repetition is looked through (it only exists on 4-D
  // values; a 3-D one is first lifted to its 4-D source).
  auto kvType = [](Value x) {
    auto [lifted, type] = as4D(x);
    if (!lifted)
      return type;
    return cast<RankedTensorType>(throughRepeat(lifted).getType());
  };
  RankedTensorType qType = as4D(chain.query).second;
  RankedTensorType kType = kvType(chain.key), vType = kvType(chain.value);
  if (hasEncoding(chain.query) || hasEncoding(chain.key) ||
      hasEncoding(chain.value) || qType.getEncoding() || kType.getEncoding() ||
      vType.getEncoding())
    return rewriter.notifyMatchFailure(root, "tensors with an encoding");
  Type elem = qType.getElementType();
  if (kType.getElementType() != elem || vType.getElementType() != elem ||
      kType.isDynamicDim(1) || qType.isDynamicDim(1) ||
      kType.getDimSize(1) == 0 || qType.getDimSize(1) % kType.getDimSize(1) ||
      kType.getDimSize(1) != vType.getDimSize(1))
    return rewriter.notifyMatchFailure(root, "shapes do not fit the op");
  auto resultType =
      RankedTensorType::get({qType.getDimSize(0), qType.getDimSize(1),
                             qType.getDimSize(2), vType.getDimSize(3)},
                            elem);
  Type rootType = root->getResult(0).getType();
  if (!fitsResult(resultType, rootType))
    return rewriter.notifyMatchFailure(root, "result type differs");

  Location loc = root->getLoc();
  auto kv = [&](Value x) {
    return throughRepeat(materialize4D(rewriter, loc, x));
  };
  Value q = materialize4D(rewriter, loc, chain.query);
  Value k = kv(chain.key), v = kv(chain.value);
  auto op = AttentionOp::create(
      rewriter, loc, resultType, /*lse=*/Type(), q, k, v, /*gate=*/Value(),
      rewriter.getF32FloatAttr(static_cast<float>(chain.scale)), chain.causal,
      GateKindAttr::get(rewriter.getContext(), GateKind::sigmoid),
      CombineKind::mul);
  rewriter.replaceOp(root,
                     reshapeResult(rewriter, loc, op.getResult(), rootType));
  return success();
}

/// The ungated op whose result `v` is, as is or through reshapes, every
/// value on the way used once (by the next step and finally the combine).
static AttentionOp ungatedSource(Value v) {
  while (v.hasOneUse()) {
    if (auto op = v.getDefiningOp<AttentionOp>())
      // An op that returns its log-sum-exp is left as written: its
      // consumers read both results.
      return op.hasGate() || op.hasLse() ? AttentionOp() : op;
    if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>())
      v = collapse.getSrc();
    else if (auto expand = v.getDefiningOp<tensor::ExpandShapeOp>())
      v = expand.getSrc();
    else
      break;
  }
  return {};
}

/// The gate read through `map` (see isGateMap) as the op's gate operand
/// [B, Hq, Sq, Dv], with 1 for broadcast heads or last dimension: the 4-D
/// source of a collapsed gate when it has that type, else the gate expanded.
static Value gateOperand(OpBuilder &b, Location loc, Value gate, AffineMap map,
                         RankedTensorType resultType) {
  // Each dimension of the gate's root becomes a group of the operand's: on
  // [B·H, S, D] the first is B and H; a broadcast one is 1 and joins the
  // group before it (the batch is always read).
  int64_t rank = map.getNumDims();
  SmallVector<int64_t> shape(resultType.getShape());
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t d = 0, t = 0; d < rank; ++d) {
    ReassociationIndices group = {t++};
    if (rank == 3 && d == 0)
      group.push_back(t++);
    if (map.isFunctionOfDim(d)) {
      reassoc.push_back(group);
      continue;
    }
    for (int64_t u : group)
      shape[u] = 1;
    llvm::append_range(reassoc.back(), group);
  }
  auto type = RankedTensorType::get(shape, resultType.getElementType());
  if (auto [source, sourceType] = as4D(gate); source && sourceType == type)
    return source;
  return tensor::ExpandShapeOp::create(b, loc, type, gate, reassoc);
}

/// A gate read through a permuted map (`gate` in [B, S, H, D] by a combine
/// on [B, H, S, D]) transposed into the order of the op's dimensions;
/// returns the map it is then read through (`map` with its results sorted).
static AffineMap sortedGateMap(OpBuilder &b, Location loc, Value &gate,
                               AffineMap map) {
  SmallVector<int64_t> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(cast<AffineDimExpr>(e).getPosition());
  if (llvm::is_sorted(dims))
    return map;
  // Gate dimension k of the transpose is dimension order[k] of `gate`.
  SmallVector<int64_t> order =
      llvm::to_vector(llvm::seq<int64_t>(static_cast<int64_t>(dims.size())));
  llvm::sort(order, [&](int64_t x, int64_t y) { return dims[x] < dims[y]; });
  gate = createTranspose(b, loc, gate, order);
  llvm::sort(dims);
  SmallVector<AffineExpr> exprs;
  for (int64_t d : dims)
    exprs.push_back(b.getAffineDimExpr(d));
  return AffineMap::get(map.getNumDims(), 0, exprs, b.getContext());
}

namespace {
/// Attention (Q Kᵀ ... P V), rooted at the P V contraction, becomes the op
/// without a gate; a gate combine using it is folded in afterwards.
struct RaiseAttention : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp root,
                                PatternRewriter &rewriter) const override {
    if (root->getNumResults() != 1 || !hasAttentionRank(root->getResult(0)))
      return failure();
    std::optional<AttentionChain> chain =
        matchAttentionChain(root->getResult(0));
    if (!chain)
      return rewriter.notifyMatchFailure(root, "no attention chain");
    if (!isPrivateChain(root, chain->scores))
      return rewriter.notifyMatchFailure(root, "scores used elsewhere");
    return replaceByAttention(rewriter, root, *chain);
  }
};

/// `Y * act(G)` / `Y + act(G)` with Y the result of an ungated op becomes
/// the op with gate G; `act` is whatever the matcher recognizes.
struct FoldGate : OpRewritePattern<linalg::GenericOp> {
  FoldGate(MLIRContext *context, GateActivationMatcher matcher,
           PatternBenefit benefit)
      : OpRewritePattern(context, benefit), matcher(std::move(matcher)) {}

  LogicalResult matchAndRewrite(linalg::GenericOp root,
                                PatternRewriter &rewriter) const override {
    std::optional<GateCombine> gate = matchGateCombine(root, matcher);
    if (!gate)
      return rewriter.notifyMatchFailure(root, "no gate combine");
    AttentionOp ungated = ungatedSource(gate->attention);
    if (!ungated)
      return rewriter.notifyMatchFailure(root, "not the result of an op");
    RankedTensorType resultType = ungated.getResultType();
    Type rootType = root.getResult(0).getType();
    if (!fitsResult(resultType, rootType) || hasEncoding(gate->gate) ||
        gate->attention.getType() != rootType ||
        getElementTypeOrSelf(gate->gate) != resultType.getElementType())
      return rewriter.notifyMatchFailure(root, "types do not fit the op");

    Location loc = root.getLoc();
    Value read = gate->gate;
    if (!gate->collapse.empty())
      read =
          tensor::CollapseShapeOp::create(rewriter, loc, read, gate->collapse);
    // (Its own statement: it replaces `read`, which gateOperand then reads.)
    AffineMap map = sortedGateMap(rewriter, loc, read, gate->map);
    Value g = gateOperand(rewriter, loc, read, map, resultType);
    auto op = AttentionOp::create(
        rewriter, loc, resultType, /*lse=*/Type(), ungated.getQuery(),
        ungated.getKey(), ungated.getValue(), g, ungated.getScaleAttr(),
        ungated.getCausal(), gate->function, gate->combine);
    rewriter.replaceOp(root,
                       reshapeResult(rewriter, loc, op.getResult(), rootType));
    return success();
  }

  GateActivationMatcher matcher;
};

struct GatedAttentionRaisePass
    : gated_attention::impl::GatedAttentionRaisePassBase<
          GatedAttentionRaisePass> {
  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet set(context);
    populateGatedAttentionRaisePatterns(set);
    // Gate variants registered by plugins (registerGateVariant).
    context->getOrLoadDialect<GatedAttentionDialect>()->populateRaisePatterns(
        set);
    patterns = std::move(set);
    RewritePatternSet normalize(context);
    populateRaiseNormalizationPatterns(normalize);
    normalization = std::move(normalize);
    return success();
  }

  void runOnOperation() override {
    if (failed(applyPatternsGreedily(getOperation(), patterns)))
      return signalPassFailure();
    // What did not raise as written may once normalized: try on a copy of
    // each function, kept only if it raised more (so that IR without
    // attention comes out as it went in).
    SmallVector<FunctionOpInterface> functions;
    getOperation()->walk([&](FunctionOpInterface fn) {
      if (!fn.isExternal())
        functions.push_back(fn);
    });
    for (FunctionOpInterface fn : functions)
      if (failed(raiseNormalized(fn)))
        return signalPassFailure();
  }

  LogicalResult raiseNormalized(FunctionOpInterface fn) {
    auto count = [](Operation *op) {
      int64_t n = 0;
      op->walk([&](AttentionOp) { ++n; });
      return n;
    };
    // Only functions with something raising could fold.
    bool hasSoftmax = false;
    fn->walk([&](Operation *op) {
      hasSoftmax |= isa<linalg::SoftmaxOp, math::ExpOp>(op);
    });
    if (!hasSoftmax)
      return success();
    OwningOpRef<Operation *> copy(fn->clone());
    // A copy that does not settle is dropped: the function stays as raised
    // above.
    if (failed(applyPatternsGreedily(*copy, normalization,
                                     normalizationConfig(*copy))) ||
        failed(applyPatternsGreedily(*copy, patterns)))
      return success();
    if (count(*copy) <= count(fn))
      return success();
    Region &body = fn.getFunctionBody();
    body.takeBody(cast<FunctionOpInterface>(*copy).getFunctionBody());
    return success();
  }

  FrozenRewritePatternSet patterns, normalization;
};
} // namespace

void mlir::gated_attention::populateGateFoldingPatterns(
    RewritePatternSet &patterns, GateActivationMatcher matcher,
    PatternBenefit benefit) {
  patterns.add<FoldGate>(patterns.getContext(), std::move(matcher), benefit);
}

void mlir::gated_attention::populateGatedAttentionRaisePatterns(
    RewritePatternSet &patterns) {
  patterns.add<RaiseAttention>(patterns.getContext());
  populateGateFoldingPatterns(patterns, [](Value act, Value x) -> Attribute {
    std::optional<GateKind> kind = matchBuiltinActivation(act, x);
    if (!kind)
      return {};
    return GateKindAttr::get(act.getContext(), *kind);
  });
}
