//===- TilingInterfaceImpl.cpp - tiling gated_attention.attention ---------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The op tiles over (B, Hq, Sq). A tile is again a gated_attention.attention
// on slices, so tiled code keeps the op's semantics and can be tiled again or
// decomposed into the online-softmax loop.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;
using namespace mlir::gated_attention;

LogicalResult AttentionOp::reifyResultShapes(
    OpBuilder &b, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  Location loc = getLoc();
  Value query = getQuery();
  reifiedReturnShapes.push_back({tensor::getMixedSize(b, loc, query, 0),
                                 b.getIndexAttr(getNumQueryHeads()),
                                 tensor::getMixedSize(b, loc, query, 2),
                                 b.getIndexAttr(getValueHeadDim())});
  if (hasLse())
    reifiedReturnShapes.push_back(SmallVector<OpFoldResult>(
        ArrayRef(reifiedReturnShapes.front()).drop_back()));
  return success();
}

SmallVector<utils::IteratorType> AttentionOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel);
}

SmallVector<Range> AttentionOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  return {Range{zero, tensor::getMixedSize(b, loc, getQuery(), 0), one},
          Range{zero, b.getIndexAttr(getNumQueryHeads()), one},
          Range{zero, tensor::getMixedSize(b, loc, getQuery(), 2), one}};
}

/// Slice [offsets, offsets + sizes) of a 4-D tensor, unit strides.
static Value slice4d(OpBuilder &b, Location loc, Value source,
                     ArrayRef<OpFoldResult> offsets,
                     ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                        strides);
}

FailureOr<TilingResult>
AttentionOp::getTiledImplementation(OpBuilder &b,
                                    ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  OpFoldResult zero = b.getIndexAttr(0);
  OpFoldResult batchOff = offsets[0], headOff = offsets[1], rowOff = offsets[2];
  OpFoldResult batchSize = sizes[0], headSize = sizes[1], rowSize = sizes[2];
  int64_t group = getGroupSize();

  // Key/value heads of the query-head tile [h0, h0 + n): a tile inside one
  // GQA group reads one KV head; a tile of whole groups reads n / R heads.
  // A partial last tile (Hq not a multiple of the tile) has a dynamic size
  // bounded by the tile size; it is valid only inside one group.
  std::optional<int64_t> heads = getConstantIntValue(headSize);
  int64_t headTile = heads.value_or(0);
  if (!heads) {
    FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
        presburger::BoundType::UB,
        {getValueOrCreateConstantIndexOp(b, loc, headSize)},
        /*stopCondition=*/nullptr, /*closedUB=*/true);
    if (failed(bound))
      return emitOpError("tiling needs a bounded query-head tile size");
    headTile = *bound;
  }
  int64_t kvHeads;
  if (heads && *heads % group == 0)
    kvHeads = *heads / group;
  else if (group % headTile == 0)
    kvHeads = 1;
  else
    return emitOpError() << "query-head tile size " << headTile
                         << " neither divides nor is a multiple of the group "
                            "size Hq / Hkv = "
                         << group
                         << " (or does not divide Hq = " << getNumQueryHeads()
                         << ")";
  AffineExpr h;
  bindDims(ctx, h);
  OpFoldResult kvHeadOff = affine::makeComposedFoldedAffineApply(
      b, loc, h.floorDiv(group), {headOff});

  // Keys: all of them, or under the causal mask only those visible to the
  // tile's last row: [0, max(0, q0 + n + Skv - Sq)). The tile then has
  // Skv' - Sq' = q0 + Skv - Sq, the offset of its rows in the whole op.
  OpFoldResult keys = tensor::getMixedSize(b, loc, getKey(), 2);
  if (getCausal()) {
    AffineExpr q0, n, skv, sq;
    bindDims(ctx, q0, n, skv, sq);
    AffineMap lastVisible = AffineMap::get(
        4, 0, {q0 + n + skv - sq, getAffineConstantExpr(0, ctx)}, ctx);
    keys = affine::makeComposedFoldedAffineMax(
        b, loc, lastVisible,
        {rowOff, rowSize, keys, tensor::getMixedSize(b, loc, getQuery(), 2)});
  }

  SmallVector<Operation *> slices;
  auto take = [&](Value source, ArrayRef<OpFoldResult> offs,
                  ArrayRef<OpFoldResult> szs) -> Value {
    // A slice of a tensor with a static 0 dim holds nothing, and
    // tensor.extract_slice rejects its offset 0 there as out of bounds.
    auto type = cast<RankedTensorType>(source.getType());
    if (llvm::is_contained(type.getShape(), 0))
      return tensor::EmptyOp::create(b, loc, szs, type.getElementType());
    Value s = slice4d(b, loc, source, offs, szs);
    slices.push_back(s.getDefiningOp());
    return s;
  };
  Value query =
      take(getQuery(), {batchOff, headOff, rowOff, zero},
           {batchSize, headSize, rowSize, b.getIndexAttr(getHeadDim())});
  Value key = take(
      getKey(), {batchOff, kvHeadOff, zero, zero},
      {batchSize, b.getIndexAttr(kvHeads), keys, b.getIndexAttr(getHeadDim())});
  Value value = take(getValue(), {batchOff, kvHeadOff, zero, zero},
                     {batchSize, b.getIndexAttr(kvHeads), keys,
                      b.getIndexAttr(getValueHeadDim())});
  Value gate;
  if (hasGate()) {
    bool shared = isGateShared();
    gate =
        take(getGateInput(), {batchOff, shared ? zero : headOff, rowOff, zero},
             {batchSize, shared ? b.getIndexAttr(1) : headSize, rowSize,
              b.getIndexAttr(getGateType().getDimSize(3))});
  }

  SmallVector<int64_t> resultShape;
  SmallVector<Value> dynamic;
  dispatchIndexOpFoldResults(
      {batchSize, headSize, rowSize, b.getIndexAttr(getValueHeadDim())},
      dynamic, resultShape);
  auto resultType =
      RankedTensorType::get(resultShape, getResultType().getElementType());
  // The log-sum-exp's tile is the domain's: B x Hq x Sq.
  Type lseType;
  if (hasLse())
    lseType = RankedTensorType::get(
        ArrayRef(resultShape).drop_back(),
        cast<RankedTensorType>(getLse().getType()).getElementType());
  auto tiled = AttentionOp::create(b, loc, resultType, lseType, query, key,
                                   value, gate, getScaleAttr(), getCausalAttr(),
                                   getGateAttr(), getCombineAttr());
  return TilingResult{{tiled}, SmallVector<Value>(tiled->getResults()), slices};
}

LogicalResult AttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets = {offsets[0], offsets[1], offsets[2]};
  resultSizes = {sizes[0], sizes[1], sizes[2]};
  // The result has the value channels besides; the log-sum-exp does not.
  if (resultNumber == 0) {
    resultOffsets.push_back(b.getIndexAttr(0));
    resultSizes.push_back(b.getIndexAttr(getValueHeadDim()));
  }
  return success();
}

LogicalResult AttentionOp::getIterationDomainTileFromResultTile(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> resultOffsets,
    ArrayRef<OpFoldResult> resultSizes,
    SmallVectorImpl<OpFoldResult> &iterDomainOffsets,
    SmallVectorImpl<OpFoldResult> &iterDomainSizes) {
  // Channels are not a loop of the op: only whole rows can be produced.
  if (resultNumber == 0 &&
      (!isConstantIntValue(resultOffsets[3], 0) ||
       !isConstantIntValue(resultSizes[3], getValueHeadDim())))
    return failure();
  iterDomainOffsets.assign(resultOffsets.begin(), resultOffsets.begin() + 3);
  iterDomainSizes.assign(resultSizes.begin(), resultSizes.begin() + 3);
  return success();
}

FailureOr<TilingResult>
AttentionOp::generateResultTileValue(OpBuilder &b, unsigned resultNumber,
                                     ArrayRef<OpFoldResult> offsets,
                                     ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> domainOffsets, domainSizes;
  if (failed(getIterationDomainTileFromResultTile(
          b, resultNumber, offsets, sizes, domainOffsets, domainSizes)))
    return failure();
  return getTiledImplementation(b, domainOffsets, domainSizes);
}
