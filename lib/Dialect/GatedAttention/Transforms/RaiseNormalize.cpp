//===- RaiseNormalize.cpp - one form for every spelling of attention ------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Frontends spell the same attention many ways: torch-mlir folds heads into
// the batch for a 3-D batch_matmul and expands the scores back to 4-D for
// the softmax; keeps reduced dimensions as unit dims read through constant
// 0 indices; builds the causal mask from iotas. Rather than teach the
// matchers each spelling, these patterns rewrite them towards one form:
//
// - contractions on [B·H, ...] between a collapse and an expand of the heads
//   become 4-D contractions on [B, H, ...] (the reshapes then cancel);
// - transposes that move unit dims (torch's einsum pads operands to 5-D)
//   lose them, and a transpose between a collapse and the matching expand
//   becomes a transpose of the uncollapsed value;
// - a unit dimension read or written through a constant 0 index is dropped
//   (the operand collapsed, the result expanded back), so reductions keep
//   [..., 1] nowhere and broadcasts read the reduced value directly;
// - producers computed from constants and indices only (masks) are fused
//   into their consumers and folded to scalars;
// - results nobody reads (torch's max also computes an argmax) are erased.
//
// The raising pass applies them to a copy of each function and keeps the
// copy only when it raised something.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"
#include "RaiseBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONNORMALIZEPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

/// Whether `v` depends on nothing but constants and linalg indices: no block
/// argument outside linalg bodies (function arguments, loop variables).
static bool isConstantLike(Value v, int depth = 0) {
  if (depth > 32)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return isa<linalg::LinalgOp>(arg.getOwner()->getParentOp());
  Operation *op = v.getDefiningOp();
  if (op->hasTrait<OpTrait::ConstantLike>() || isa<linalg::IndexOp>(op))
    return true;
  if (!isa<linalg::LinalgOp, tensor::EmptyOp, tensor::ExpandShapeOp,
           tensor::CollapseShapeOp>(op) &&
      op->getNumRegions() == 0 && !isPure(op))
    return false;
  for (Value operand : op->getOperands())
    if (!isConstantLike(operand, depth + 1))
      return false;
  for (Region &region : op->getRegions())
    for (Operation &inner : region.getOps())
      for (Value operand : inner.getOperands())
        if (!isConstantLike(operand, depth + 1))
          return false;
  return true;
}

/// The static unit dims of `type` that `map` reads at the constant 0.
static SmallVector<int64_t> constantUnitDims(AffineMap map,
                                             RankedTensorType type) {
  SmallVector<int64_t> dims;
  for (auto [i, expr] : llvm::enumerate(map.getResults()))
    if (auto c = dyn_cast<AffineConstantExpr>(expr);
        c && c.getValue() == 0 && type.getDimSize(i) == 1)
      dims.push_back(i);
  return dims;
}

/// The reassociation folding the unit `dims` of a rank-`rank` value into
/// their neighbours, and the reduced shape; nullopt when every dim goes.
static std::optional<SmallVector<ReassociationIndices>>
dropDims(int64_t rank, ArrayRef<int64_t> dims) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (int64_t d = 0; d < rank; ++d) {
    pending.push_back(d);
    if (!llvm::is_contained(dims, d)) {
      groups.push_back(pending);
      pending.clear();
    }
  }
  if (groups.empty())
    return std::nullopt;
  llvm::append_range(groups.back(), pending);
  return groups;
}

static RankedTensorType dropShape(RankedTensorType type,
                                  ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      shape.push_back(type.getDimSize(d));
  return RankedTensorType::get(shape, type.getElementType());
}

/// Whether `collapse` only drops static unit dims (each group holds at most
/// one other dim).
static bool dropsUnitDimsOnly(tensor::CollapseShapeOp collapse) {
  ArrayRef<int64_t> shape = collapse.getSrcType().getShape();
  return llvm::all_of(collapse.getReassociationIndices(),
                      [&](const ReassociationIndices &group) {
                        return llvm::count_if(group, [&](int64_t d) {
                                 return shape[d] != 1;
                               }) <= 1;
                      });
}

Value mlir::gated_attention::createTranspose(OpBuilder &b, Location loc,
                                             Value v, ArrayRef<int64_t> perm) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : perm)
    sizes.push_back(tensor::getMixedSize(b, loc, v, d));
  Value init =
      tensor::EmptyOp::create(b, loc, sizes, getElementTypeOrSelf(v.getType()));
  return linalg::TransposeOp::create(b, loc, v, init, perm)->getResult(0);
}

namespace {
/// A generic operand (input or init) of static unit dims indexed by the
/// constant 0: the operand collapsed without them, the map without them;
/// for an init the result is expanded back for its users.
struct DropConstantUnitDims : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type)
        continue;
      AffineMap map = maps[operand.getOperandNumber()];
      SmallVector<int64_t> dims = constantUnitDims(map, type);
      if (dims.empty())
        continue;
      std::optional<SmallVector<ReassociationIndices>> groups =
          dropDims(type.getRank(), dims);
      if (!groups)
        continue;
      Location loc = op.getLoc();
      RankedTensorType reduced = dropShape(type, dims);
      Value collapsed = tensor::CollapseShapeOp::create(rewriter, loc, reduced,
                                                        operand.get(), *groups);
      SmallVector<AffineExpr> exprs;
      for (auto [i, e] : llvm::enumerate(map.getResults()))
        if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
          exprs.push_back(e);
      maps[operand.getOperandNumber()] =
          AffineMap::get(map.getNumDims(), 0, exprs, op.getContext());
      if (op.isDpsInput(&operand)) {
        rewriter.modifyOpInPlace(op, [&] {
          operand.set(collapsed);
          op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
        });
        return success();
      }
      // An init: the new generic yields the reduced result.
      int64_t result = op.getTiedOpResult(&operand).getResultNumber();
      SmallVector<Value> inits(op.getDpsInits());
      inits[operand.getOperandNumber() - op.getNumDpsInputs()] = collapsed;
      SmallVector<Type> types(op.getResultTypes());
      types[result] = reduced;
      auto generic =
          linalg::GenericOp::create(rewriter, loc, types, op.getDpsInputs(),
                                    inits, maps, op.getIteratorTypesArray());
      rewriter.inlineRegionBefore(op.getRegion(), generic.getRegion(),
                                  generic.getRegion().begin());
      SmallVector<Value> replacements(generic.getResults());
      replacements[result] = tensor::ExpandShapeOp::create(
          rewriter, loc, type, generic.getResult(result), *groups);
      rewriter.replaceOp(op, replacements);
      return success();
    }
    return failure();
  }
};

/// expand_shape [[0, 1], ...] (B·H -> B, H) of a contraction over [B·H,
/// M, K] x [B·H, K, N] becomes the contraction over the expanded operands:
/// a 4-D linalg.generic whose operands are the expanded (usually: the
/// un-collapsed) 4-D values.
struct ExpandHeadsOfContraction : OpRewritePattern<tensor::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExpandShapeOp expand,
                                PatternRewriter &rewriter) const override {
    auto op = expand.getSrc().getDefiningOp<linalg::LinalgOp>();
    if (!op || !op->hasOneUse() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || op.getNumLoops() != 4 ||
        !linalg::isaContractionOpInterface(op))
      return failure();
    auto resultType = cast<RankedTensorType>(expand.getResultType());
    if (resultType.getRank() != 4 ||
        expand.getReassociationIndices() !=
            SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}})
      return failure();
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->batch.size() != 1 || dims->m.size() != 1 ||
        dims->n.size() != 1 || dims->k.size() != 1)
      return failure();
    // Every operand leads with the batch loop.
    unsigned batch = dims->batch[0];
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    for (AffineMap map : maps)
      if (map.getNumResults() != 3 ||
          map.getResult(0) != getAffineDimExpr(batch, op.getContext()))
        return failure();
    Type elem = resultType.getElementType();
    if (!isa<FloatType>(elem) || llvm::any_of(op->getOperands(), [&](Value v) {
          return getElementTypeOrSelf(v) != elem;
        }))
      return failure();

    // Loops (batch -> b, h; the others shift by one); maps gain h.
    MLIRContext *ctx = op.getContext();
    auto shift = [&](AffineExpr e) {
      unsigned d = cast<AffineDimExpr>(e).getPosition();
      return getAffineDimExpr(d < batch ? d : d + 1, ctx);
    };
    SmallVector<AffineMap> newMaps;
    for (AffineMap map : maps) {
      SmallVector<AffineExpr> exprs = {getAffineDimExpr(batch, ctx),
                                       getAffineDimExpr(batch + 1, ctx)};
      for (AffineExpr e : map.getResults().drop_front())
        exprs.push_back(shift(e));
      newMaps.push_back(AffineMap::get(5, 0, exprs, ctx));
    }
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    iters.insert(iters.begin() + batch + 1, utils::IteratorType::parallel);

    Location loc = expand.getLoc();
    OpFoldResult h = expand.getMixedOutputShape()[1];
    auto expandOperand = [&](Value v) -> Value {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<OpFoldResult> shape = {expand.getMixedOutputShape()[0], h};
      for (int64_t d = 1; d < 3; ++d)
        shape.push_back(tensor::getMixedSize(rewriter, loc, v, d));
      auto [staticShape, dynamic] = decomposeMixedValues(shape);
      return tensor::ExpandShapeOp::create(
          rewriter, loc,
          RankedTensorType::get(staticShape, type.getElementType()), v,
          expand.getReassociationIndices(), shape);
    };
    Value lhs = expandOperand(op.getDpsInputs()[0]);
    Value rhs = expandOperand(op.getDpsInputs()[1]);
    Value init = expandOperand(op.getDpsInits()[0]);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{lhs, rhs},
        ValueRange{init}, newMaps, iters,
        [](OpBuilder &b, Location loc, ValueRange args) {
          Value mul = arith::MulFOp::create(b, loc, args[0], args[1]);
          Value add = arith::AddFOp::create(b, loc, args[2], mul);
          linalg::YieldOp::create(b, loc, add);
        });
    rewriter.replaceOp(expand, generic.getResult(0));
    return success();
  }
};
/// Whether `v` is computed by a contraction (a linalg op with a reduction).
static bool isContractionResult(Value v) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  return op && op.getNumReductionLoops() > 0 &&
         linalg::isaContractionOpInterface(op);
}

/// An elementwise generic reading a linalg.transpose (used only there)
/// computes the transpose of the same generic on the untransposed value
/// and the inversely transposed others: transposes move below elementwise
/// code, out of the chain from attention to its gate (HF transformers
/// transposes SDPA's output back to [B, S, H, D] before gating it). Others
/// read through a broadcast (the paper's headwise gate, [B, S, H] on
/// [B, S, H, D]) keep their value and are read through the map composed
/// with the permutation instead.
struct SinkTransposeBelowElementwise : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    // Combines of two values or more: a one-input generic on a transpose
    // (a scale of Kᵀ) is part of the chain and stays where it is.
    if (op.getNumParallelLoops() != op.getNumLoops() ||
        op.getNumResults() != 1 || op.getNumDpsInputs() < 2 ||
        !op.hasPureTensorSemantics())
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    if (!maps.back().isIdentity() || !llvm::all_of(maps, [](AffineMap m) {
          return m.isProjectedPermutation(/*allowZeroInResults=*/false);
        }))
      return failure();
    // Only transposes of a contraction's result (attention's P·V), read at
    // every element: moving every transpose would churn through unrelated
    // code (rotary embeddings) without end.
    linalg::TransposeOp transpose;
    for (OpOperand *input : op.getDpsInputOperands())
      if (auto t = input->get().getDefiningOp<linalg::TransposeOp>();
          t && t->hasOneUse() && maps[input->getOperandNumber()].isIdentity() &&
          isContractionResult(t.getInput())) {
        transpose = t;
        break;
      }
    if (!transpose || isIdentityPermutation(transpose.getPermutation()))
      return failure();
    ArrayRef<int64_t> perm = transpose.getPermutation();
    SmallVector<int64_t> inverse = invertPermutationVector(perm);
    Location loc = op.getLoc();
    auto transposed = [&](Value v, ArrayRef<int64_t> p) -> Value {
      if (auto t = v.getDefiningOp<linalg::TransposeOp>();
          t && t.getPermutation() == ArrayRef(invertPermutationVector(p)))
        return t.getInput();
      return createTranspose(rewriter, loc, v, p);
    };
    // Loop i of the old generic is loop perm[i] of the new one.
    SmallVector<AffineExpr> oldLoops;
    for (int64_t p : perm)
      oldLoops.push_back(rewriter.getAffineDimExpr(p));
    AffineMap toOld =
        AffineMap::get(op.getNumLoops(), 0, oldLoops, op.getContext());
    SmallVector<Value> inputs;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap &map = maps[input->getOperandNumber()];
      if (map.isIdentity()) {
        inputs.push_back(transposed(input->get(), inverse));
      } else {
        inputs.push_back(input->get());
        map = map.compose(toOld);
      }
    }
    Value init = transposed(op.getDpsInits()[0], inverse);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, inputs, ValueRange{init},
        maps, op.getIteratorTypesArray());
    rewriter.inlineRegionBefore(op.getRegion(), generic.getRegion(),
                                generic.getRegion().begin());
    rewriter.replaceOp(op, transposed(generic.getResult(0), perm));
    return success();
  }
};

/// A comparison of a select of two constants with a constant is a select of
/// the two comparisons' results (then `c`, `!c` or a constant, which arith
/// canonicalizes further): `tril(ones) == 0`, torch's masked_fill of a
/// float triangle, becomes the negated index comparison the mask matcher
/// reads.
template <typename CmpOp, typename AttrT>
struct CompareOfSelectedConstants : OpRewritePattern<CmpOp> {
  using OpRewritePattern<CmpOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(CmpOp cmp,
                                PatternRewriter &rewriter) const override {
    auto predicate = cmp.getPredicate();
    auto select = cmp.getLhs().template getDefiningOp<arith::SelectOp>();
    AttrT rhs, onTrue, onFalse;
    if (!select || !matchPattern(cmp.getRhs(), m_Constant(&rhs)) ||
        !matchPattern(select.getTrueValue(), m_Constant(&onTrue)) ||
        !matchPattern(select.getFalseValue(), m_Constant(&onFalse)))
      return failure();
    auto i1 = [&](bool b) -> Value {
      return arith::ConstantIntOp::create(rewriter, cmp.getLoc(), b, 1);
    };
    rewriter.replaceOpWithNewOp<arith::SelectOp>(
        cmp, select.getCondition(),
        i1(arith::applyCmpPredicate(predicate, onTrue.getValue(),
                                    rhs.getValue())),
        i1(arith::applyCmpPredicate(predicate, onFalse.getValue(),
                                    rhs.getValue())));
    return success();
  }
};

/// A reshape that only adds or drops unit dims of a value computed from
/// linalg indices alone (a generic without inputs: torch's `tril(ones)`
/// viewed as [1, 1, S, S]) is that generic computed in the new shape, so
/// that it fuses into its users as the mask it is.
template <typename ReshapeOp>
struct ReshapeOfIndexOnlyGeneric : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern<ReshapeOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp reshape,
                                PatternRewriter &rewriter) const override {
    auto producer =
        reshape.getSrc().template getDefiningOp<linalg::GenericOp>();
    if (!producer || producer.getNumDpsInputs() != 0 ||
        producer.getNumResults() != 1 || !isElementwise(producer) ||
        !producer.getBody()->getArgument(0).use_empty())
      return failure();
    RankedTensorType srcType = reshape.getSrcType();
    RankedTensorType resultType = reshape.getResultType();
    if (!srcType.hasStaticShape() || !resultType.hasStaticShape())
      return failure();
    constexpr bool expanding = std::is_same_v<ReshapeOp, tensor::ExpandShapeOp>;
    RankedTensorType big = expanding ? resultType : srcType;
    RankedTensorType small = expanding ? srcType : resultType;
    // Each dim of the small shape is one dim of its group in the big shape,
    // the others being units: where[d] is that dim (-1 for a unit group,
    // whose index is 0).
    SmallVector<int64_t> where;
    for (auto [d, group] : llvm::enumerate(reshape.getReassociationIndices())) {
      int64_t size = small.getDimSize(d), found = -1;
      for (int64_t b : group)
        if (big.getDimSize(b) != 1) {
          if (found >= 0)
            return failure();
          found = b;
        }
      if (found < 0 && size != 1)
        return failure();
      where.push_back(found);
    }
    Location loc = reshape.getLoc();
    Value init = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(),
                                         resultType.getElementType());
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType}, ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{
            rewriter.getMultiDimIdentityMap(resultType.getRank())},
        SmallVector<utils::IteratorType>(resultType.getRank(),
                                         utils::IteratorType::parallel));
    IRMapping mapping;
    producer.getRegion().cloneInto(&generic.getRegion(), mapping);
    SmallVector<linalg::IndexOp> indices;
    generic.getBody()->walk([&](linalg::IndexOp i) { indices.push_back(i); });
    // The old generic's dim `dim` in the new one's indices.
    auto newIndex = [&](OpBuilder &b, Location l, int64_t dim) -> Value {
      if (expanding) {
        // Old dims are the small shape's.
        if (where[dim] < 0)
          return arith::ConstantIndexOp::create(b, l, 0);
        return linalg::IndexOp::create(b, l, where[dim]);
      }
      // Old dims are the big shape's: the small dim whose group it is the
      // non-unit dim of, or 0.
      for (auto [d, b2] : llvm::enumerate(where))
        if (b2 == dim)
          return linalg::IndexOp::create(b, l, d);
      return arith::ConstantIndexOp::create(b, l, 0);
    };
    for (linalg::IndexOp index : indices) {
      rewriter.setInsertionPoint(index);
      rewriter.replaceOp(index,
                         newIndex(rewriter, index.getLoc(), index.getDim()));
    }
    rewriter.replaceOp(reshape, generic.getResult(0));
    return success();
  }
};

/// A transpose that moves static unit dims (torch's einsum lowering pads
/// every operand to 5-D with them) is a transpose of its other dims between
/// reshapes: collapse the unit dims away, transpose what remains (nothing if
/// its order is kept), expand back. The reshapes then cancel with the ones
/// around it, leaving the 4-D or [B·H] form the other patterns know.
struct DropUnitDimsOfTranspose : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inType = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto outType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!op.hasPureTensorSemantics() || !inType || !outType)
      return failure();
    ArrayRef<int64_t> perm = op.getPermutation();
    // The input dims that stay, in the order the output has them.
    SmallVector<int64_t> kept;
    for (int64_t d : perm)
      if (inType.getDimSize(d) != 1)
        kept.push_back(d);
    // Only when a unit dim moves: one that stays (B = 1 in a transpose of
    // Kᵀ) is not in the way, and TransposeOfCollapsedGroups makes such
    // transposes.
    bool movesUnitDim = llvm::any_of(llvm::enumerate(perm), [&](auto it) {
      return inType.getDimSize(it.value()) == 1 &&
             it.value() != static_cast<int64_t>(it.index());
    });
    if (!movesUnitDim || kept.empty())
      return failure();
    std::optional<SmallVector<ReassociationIndices>> inGroups =
        dropDims(inType.getRank(), unitDims(inType));
    std::optional<SmallVector<ReassociationIndices>> outGroups =
        dropDims(outType.getRank(), unitDims(outType));
    if (!inGroups || !outGroups)
      return failure();
    // `kept` renumbered to positions among the input's kept dims.
    SmallVector<int64_t> sorted(kept);
    llvm::sort(sorted);
    SmallVector<int64_t> inner;
    for (int64_t d : kept)
      inner.push_back(llvm::find(sorted, d) - sorted.begin());

    Location loc = op.getLoc();
    Value value = tensor::CollapseShapeOp::create(rewriter, loc, op.getInput(),
                                                  *inGroups);
    if (!isIdentityPermutation(inner))
      value = createTranspose(rewriter, loc, value, inner);
    SmallVector<OpFoldResult> outShape =
        tensor::getMixedSizes(rewriter, loc, op->getResult(0));
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, outType, value,
                                                       *outGroups, outShape);
    return success();
  }

  /// The static unit dims of `type`.
  static SmallVector<int64_t> unitDims(RankedTensorType type) {
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) == 1)
        dims.push_back(d);
    return dims;
  }
};

/// expand_shape(transpose(collapse_shape(x))) where the expand restores the
/// groups the collapse merged, in the transposed order, is a transpose of x
/// (einsum's lowering transposes Kᵀ on [B·H, S, D]).
struct TransposeOfCollapsedGroups : OpRewritePattern<tensor::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExpandShapeOp expand,
                                PatternRewriter &rewriter) const override {
    auto transpose = expand.getSrc().getDefiningOp<linalg::TransposeOp>();
    if (!transpose || !transpose->hasOneUse() ||
        !transpose.hasPureTensorSemantics())
      return failure();
    auto collapse =
        transpose.getInput().getDefiningOp<tensor::CollapseShapeOp>();
    if (!collapse)
      return failure();
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    SmallVector<ReassociationIndices> expandGroups =
        expand.getReassociationIndices();
    ArrayRef<int64_t> perm = transpose.getPermutation();
    if (groups.size() != perm.size() || expandGroups.size() != perm.size())
      return failure();
    // Output group i is input group perm[i], dim for dim (static sizes).
    ArrayRef<int64_t> in = collapse.getSrcType().getShape();
    ArrayRef<int64_t> out = expand.getResultType().getShape();
    SmallVector<int64_t> full;
    for (auto [i, p] : llvm::enumerate(perm)) {
      if (expandGroups[i].size() != groups[p].size())
        return failure();
      for (auto [o, d] : llvm::zip(expandGroups[i], groups[p])) {
        if (ShapedType::isDynamic(in[d]) || in[d] != out[o])
          return failure();
        full.push_back(d);
      }
    }
    rewriter.replaceOp(expand, createTranspose(rewriter, expand.getLoc(),
                                               collapse.getSrc(), full));
    return success();
  }
};

/// A transpose by the identity (two transposes composed) is its input.
struct FoldIdentityTranspose : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() ||
        !isIdentityPermutation(op.getPermutation()))
      return failure();
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};
} // namespace

GreedyRewriteConfig
mlir::gated_attention::normalizationConfig(Operation *root) {
  // The patterns move reshapes and transposes; should two of them ever
  // push one back and forth, the budget ends it (a few rewrites per op).
  int64_t ops = 0;
  root->walk([&](Operation *) { ++ops; });
  return GreedyRewriteConfig().setMaxNumRewrites(16 * ops + 1000);
}

void mlir::gated_attention::populateRaiseNormalizationPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<DropConstantUnitDims, DropUnitDimsOfTranspose,
               ExpandHeadsOfContraction, FoldIdentityTranspose,
               SinkTransposeBelowElementwise, TransposeOfCollapsedGroups,
               CompareOfSelectedConstants<arith::CmpFOp, FloatAttr>,
               CompareOfSelectedConstants<arith::CmpIOp, IntegerAttr>,
               ReshapeOfIndexOnlyGeneric<tensor::ExpandShapeOp>,
               ReshapeOfIndexOnlyGeneric<tensor::CollapseShapeOp>>(ctx);
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
  // Fused into their users: masks (and other index/constant-only values,
  // their splat operands becoming scalars) and one-input elementwise code
  // used once by elementwise code (an activation split over generics, as
  // torch's silu, x * sigmoid(x)). Not fused: softmax steps (two inputs)
  // and anything into contractions or reductions, which the matchers read
  // as they are.
  linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *fused) {
    if (isConstantLike(fused->get()))
      return true;
    auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
    auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
    return producer && consumer && producer.getNumDpsInputs() == 1 &&
           fused->get().hasOneUse() && isElementwise(producer) &&
           isElementwise(consumer);
  });
  // A collapse feeding an elementwise combine (attention's output reshaped
  // to [B, S, H·D] before its gate) moves below it.
  // (Not one that only drops unit dims: it cancels with the expand above
  // it, which einsum's lowering pads with a unit dim.)
  linalg::populateFoldReshapeOpsByExpansionPatterns(
      patterns, [](OpOperand *fused) {
        auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
        auto collapse = fused->get().getDefiningOp<tensor::CollapseShapeOp>();
        return consumer && isElementwise(consumer) &&
               consumer.getNumDpsInputs() >= 2 && collapse &&
               !dropsUnitDimsOnly(collapse);
      });
  for (RegisteredOperationName name : ctx->getRegisteredOperations())
    if (name.getDialectNamespace() == "tensor" ||
        name.getDialectNamespace() == "linalg" ||
        name.getDialectNamespace() == "arith")
      name.getCanonicalizationPatterns(patterns, ctx);
}

namespace {
struct GatedAttentionNormalizePass
    : gated_attention::impl::GatedAttentionNormalizePassBase<
          GatedAttentionNormalizePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseNormalizationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     normalizationConfig(getOperation()))))
      getOperation()->emitWarning(
          "normalization did not converge; the IR is partly normalized");
  }
};
} // namespace
