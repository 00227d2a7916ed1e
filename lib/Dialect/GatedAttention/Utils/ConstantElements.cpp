//===- ConstantElements.cpp - elements of tensors computed from constants -===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// A mask may come from a constant buffer (nanoGPT's registered `bias`, a
// lower triangle of ones) sliced to the sequence, viewed and compared before
// a select reads it. The matchers check such a mask element by element; this
// evaluates one element of the chain at a time, without folding anything.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::gated_attention;

/// Element `linear` (row-major) of a dense or dense_resource constant.
static std::optional<ConstantElement> elementOf(ElementsAttr attr,
                                                int64_t linear) {
  Type type = attr.getElementType();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (isa<FloatType>(type))
      return ConstantElement(dense.getValues<APFloat>()[linear]);
    if (type.isIntOrIndex())
      return ConstantElement(dense.getValues<APInt>()[linear]);
    return std::nullopt;
  }
  auto fromResource = [&](auto typed,
                          auto make) -> std::optional<ConstantElement> {
    if (!typed)
      return std::nullopt;
    auto data = typed.tryGetAsArrayRef();
    if (!data || linear >= static_cast<int64_t>(data->size()))
      return std::nullopt;
    return make((*data)[linear]);
  };
  if (auto r = dyn_cast<DenseF32ResourceElementsAttr>(attr))
    return fromResource(r, [](float x) { return ConstantElement(APFloat(x)); });
  if (auto r = dyn_cast<DenseF64ResourceElementsAttr>(attr))
    return fromResource(r,
                        [](double x) { return ConstantElement(APFloat(x)); });
  if (auto r = dyn_cast<DenseBoolResourceElementsAttr>(attr))
    return fromResource(
        r, [](bool x) { return ConstantElement(APInt(1, x ? 1 : 0)); });
  auto integer = [](unsigned width) {
    return [width](auto x) {
      return ConstantElement(APInt(width, static_cast<uint64_t>(x),
                                   /*isSigned=*/std::is_signed_v<decltype(x)>));
    };
  };
  // torch stores a bool buffer as bytes (i8).
  if (auto r = dyn_cast<DenseI8ResourceElementsAttr>(attr))
    return fromResource(r, integer(8));
  if (auto r = dyn_cast<DenseUI8ResourceElementsAttr>(attr))
    return fromResource(r, integer(8));
  if (auto r = dyn_cast<DenseI32ResourceElementsAttr>(attr))
    return fromResource(r, integer(32));
  if (auto r = dyn_cast<DenseI64ResourceElementsAttr>(attr))
    return fromResource(r, integer(64));
  return std::nullopt;
}

static int64_t linearIndex(ArrayRef<int64_t> shape, ArrayRef<int64_t> index) {
  int64_t linear = 0;
  for (auto [size, i] : llvm::zip_equal(shape, index))
    linear = linear * size + i;
  return linear;
}

static std::optional<ConstantElement>
elementAt(Value v, ArrayRef<int64_t> index, int depth);

/// A scalar of `op`'s body at loop point `loops`.
static std::optional<ConstantElement>
scalarAt(linalg::GenericOp op, Value s, ArrayRef<int64_t> loops, int depth) {
  if (depth > 64)
    return std::nullopt;
  if (auto arg = dyn_cast<BlockArgument>(s)) {
    if (arg.getOwner() != op.getBody() ||
        arg.getArgNumber() >= op.getNumDpsInputs())
      return std::nullopt;
    AffineMap map =
        op.getMatchingIndexingMap(op.getDpsInputOperand(arg.getArgNumber()));
    SmallVector<int64_t> at;
    for (AffineExpr e : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e))
        at.push_back(loops[d.getPosition()]);
      else if (auto c = dyn_cast<AffineConstantExpr>(e))
        at.push_back(c.getValue());
      else
        return std::nullopt;
    }
    return elementAt(op.getDpsInputs()[arg.getArgNumber()], at, depth + 1);
  }
  Operation *def = s.getDefiningOp();
  if (!def || def->getParentRegion() != &op.getRegion())
    return matchPattern(s, m_Constant()) ? elementAt(s, {}, depth + 1)
                                         : std::nullopt;
  if (auto index = dyn_cast<linalg::IndexOp>(def))
    return ConstantElement(APInt(64, loops[index.getDim()]));
  auto operand = [&](unsigned i) {
    return scalarAt(op, def->getOperand(i), loops, depth + 1);
  };
  if (auto cst = dyn_cast<arith::ConstantOp>(def))
    return elementAt(cst.getResult(), {}, depth + 1);
  if (auto select = dyn_cast<arith::SelectOp>(def)) {
    std::optional<ConstantElement> c = operand(0);
    if (!c || !std::holds_alternative<APInt>(*c))
      return std::nullopt;
    return operand(std::get<APInt>(*c).isZero() ? 2 : 1);
  }
  if (!s.getType().isIntOrIndexOrFloat())
    return std::nullopt;
  std::optional<ConstantElement> a = operand(0);
  if (!a)
    return std::nullopt;
  unsigned width =
      isa<IndexType>(s.getType())
          ? 64
          : getElementTypeOrSelf(s.getType()).getIntOrFloatBitWidth();
  if (def->getNumOperands() == 1) {
    if (auto *x = std::get_if<APInt>(&*a)) {
      if (isa<arith::IndexCastOp, arith::ExtSIOp>(def))
        return ConstantElement(x->sextOrTrunc(width));
      if (isa<arith::IndexCastUIOp, arith::ExtUIOp, arith::TruncIOp>(def))
        return ConstantElement(x->zextOrTrunc(width));
      if (isa<arith::SIToFPOp, arith::UIToFPOp>(def)) {
        APFloat f(cast<FloatType>(s.getType()).getFloatSemantics());
        f.convertFromAPInt(*x, isa<arith::SIToFPOp>(def),
                           APFloat::rmNearestTiesToEven);
        return ConstantElement(f);
      }
      return std::nullopt;
    }
    APFloat x = std::get<APFloat>(*a);
    if (isa<arith::ExtFOp, arith::TruncFOp>(def)) {
      bool lost;
      x.convert(cast<FloatType>(s.getType()).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      return ConstantElement(x);
    }
    if (isa<arith::NegFOp>(def))
      return ConstantElement(-x);
    return std::nullopt;
  }
  std::optional<ConstantElement> b = operand(1);
  if (!b || a->index() != b->index() || def->getNumOperands() != 2)
    return std::nullopt;
  if (auto *x = std::get_if<APInt>(&*a)) {
    const APInt &y = std::get<APInt>(*b);
    if (x->getBitWidth() != y.getBitWidth())
      return std::nullopt;
    if (auto cmp = dyn_cast<arith::CmpIOp>(def))
      return ConstantElement(
          APInt(1, arith::applyCmpPredicate(cmp.getPredicate(), *x, y)));
    if (isa<arith::AndIOp>(def))
      return ConstantElement(*x & y);
    if (isa<arith::OrIOp>(def))
      return ConstantElement(*x | y);
    if (isa<arith::XOrIOp>(def))
      return ConstantElement(*x ^ y);
    if (isa<arith::AddIOp>(def))
      return ConstantElement(*x + y);
    if (isa<arith::SubIOp>(def))
      return ConstantElement(*x - y);
    if (isa<arith::MulIOp>(def))
      return ConstantElement(*x * y);
    return std::nullopt;
  }
  APFloat x = std::get<APFloat>(*a);
  const APFloat &y = std::get<APFloat>(*b);
  if (&x.getSemantics() != &y.getSemantics())
    return std::nullopt;
  if (auto cmp = dyn_cast<arith::CmpFOp>(def))
    return ConstantElement(
        APInt(1, arith::applyCmpPredicate(cmp.getPredicate(), x, y)));
  APFloat::roundingMode rm = APFloat::rmNearestTiesToEven;
  if (isa<arith::AddFOp>(def))
    x.add(y, rm);
  else if (isa<arith::SubFOp>(def))
    x.subtract(y, rm);
  else if (isa<arith::MulFOp>(def))
    x.multiply(y, rm);
  else
    return std::nullopt;
  return ConstantElement(x);
}

static std::optional<ConstantElement>
elementAt(Value v, ArrayRef<int64_t> index, int depth) {
  if (depth > 64)
    return std::nullopt;
  auto type = dyn_cast<ShapedType>(v.getType());
  if (type && (!type.hasStaticShape() ||
               static_cast<int64_t>(index.size()) != type.getRank()))
    return std::nullopt;
  // In bounds, whatever a slice or a map computed.
  if (type)
    for (auto [i, size] : llvm::zip_equal(index, type.getShape()))
      if (i < 0 || i >= size)
        return std::nullopt;
  if (Attribute attr; matchPattern(v, m_Constant(&attr))) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      return ConstantElement(f.getValue());
    if (auto i = dyn_cast<IntegerAttr>(attr))
      return ConstantElement(i.getValue());
    auto elements = dyn_cast<ElementsAttr>(attr);
    if (!elements || !type)
      return std::nullopt;
    return elementOf(elements, linearIndex(type.getShape(), index));
  }
  Operation *op = v.getDefiningOp();
  if (!op || !type)
    return std::nullopt;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return elementAt(fill.value(), {}, depth + 1);
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    if (llvm::any_of(slice.getStaticStrides(), ShapedType::isDynamic) ||
        llvm::any_of(slice.getStaticOffsets(), ShapedType::isDynamic))
      return std::nullopt;
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    SmallVector<int64_t> at;
    for (int64_t d = 0, k = 0; d < slice.getSourceType().getRank(); ++d)
      at.push_back(slice.getStaticOffsets()[d] +
                   (dropped[d] ? 0 : index[k++] * slice.getStaticStrides()[d]));
    return elementAt(slice.getSource(), at, depth + 1);
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    SmallVector<int64_t> at;
    for (const ReassociationIndices &group : expand.getReassociationIndices()) {
      int64_t linear = 0;
      for (int64_t d : group)
        linear = linear * type.getDimSize(d) + index[d];
      at.push_back(linear);
    }
    return elementAt(expand.getSrc(), at, depth + 1);
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    RankedTensorType source = collapse.getSrcType();
    SmallVector<int64_t> at(source.getRank());
    for (auto [g, group] :
         llvm::enumerate(collapse.getReassociationIndices())) {
      int64_t linear = index[g];
      for (int64_t d : llvm::reverse(group)) {
        at[d] = linear % source.getDimSize(d);
        linear /= source.getDimSize(d);
      }
    }
    return elementAt(collapse.getSrc(), at, depth + 1);
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    auto result = cast<OpResult>(v);
    AffineMap out = generic.getIndexingMapMatchingResult(result);
    if (generic.getNumParallelLoops() != generic.getNumLoops() ||
        !out.isIdentity())
      return std::nullopt;
    auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
    return scalarAt(generic, yield.getOperand(result.getResultNumber()), index,
                    depth + 1);
  }
  return std::nullopt;
}

std::optional<ConstantElement>
mlir::gated_attention::constantElementAt(Value v, ArrayRef<int64_t> index) {
  return elementAt(v, index, 0);
}

std::optional<ConstantElement>
mlir::gated_attention::constantScalarAt(linalg::GenericOp op, Value scalar,
                                        ArrayRef<int64_t> loops) {
  if (static_cast<int64_t>(loops.size()) != op.getNumLoops())
    return std::nullopt;
  return scalarAt(op, scalar, loops, 0);
}
