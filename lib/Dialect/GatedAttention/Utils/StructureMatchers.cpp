//===- StructureMatchers.cpp - reductions, softmax, contractions ----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;

Value mlir::gated_attention::yielded(linalg::GenericOp op) {
  return cast<linalg::YieldOp>(op.getBody()->getTerminator()).getOperand(0);
}

bool mlir::gated_attention::isElementwise(linalg::GenericOp op) {
  return op.getNumParallelLoops() == op.getNumLoops() &&
         llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); });
}

linalg::GenericOp mlir::gated_attention::matchUnaryElementwise(Value v,
                                                               Value &input) {
  auto op = v.getDefiningOp<linalg::GenericOp>();
  if (!op || !isElementwise(op) || op.getNumDpsInputs() != 1 ||
      op.getNumResults() != 1)
    return {};
  input = op.getDpsInputs()[0];
  return op;
}

bool mlir::gated_attention::isFilledWith(Value v, double c) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && isConstant(fill.value(), c);
}

Value mlir::gated_attention::matchLastDimReduction(
    Value v, function_ref<bool(Operation *)> isCombine,
    function_ref<bool(Value)> isInit) {
  auto op = v.getDefiningOp<linalg::GenericOp>();
  if (!op || op.getNumDpsInputs() != 1 || op.getNumResults() != 1)
    return {};
  int64_t rank = op.getNumLoops();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  for (int64_t i = 0; i < rank; ++i)
    if ((iters[i] == utils::IteratorType::reduction) != (i == rank - 1))
      return {};
  AffineMap in = op.getIndexingMapsArray()[0];
  AffineMap out = op.getIndexingMapsArray()[1];
  if (!in.isIdentity() ||
      out != AffineMap::getMultiDimIdentityMap(rank, op.getContext())
                 .dropResult(rank - 1))
    return {};
  if (!isInit(op.getDpsInits()[0]))
    return {};
  // combine(element, accumulator), in either order.
  Block *body = op.getBody();
  Operation *combine = yielded(op).getDefiningOp();
  if (!combine || combine->getNumOperands() != 2 || !isCombine(combine))
    return {};
  Value a = combine->getOperand(0), b = combine->getOperand(1);
  Value x = body->getArgument(0), acc = body->getArgument(1);
  if (!((a == x && b == acc) || (a == acc && b == x)))
    return {};
  return op.getDpsInputs()[0];
}

/// A reduction by CombineOp from a fill of `init`.
template <typename CombineOp>
static Value matchReductionFrom(Value v, double init) {
  return matchLastDimReduction(
      v, [](Operation *op) { return isa<CombineOp>(op); },
      [&](Value x) { return isFilledWith(x, init); });
}

/// Whether `op` is an all-parallel generic of `x` (identity map) and a row
/// statistic `row` (the identity without its last dimension); sets both.
static bool isRowBroadcastBinary(linalg::GenericOp op, Value &x, Value &row) {
  if (op.getNumDpsInputs() != 2 || op.getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  int64_t rank = op.getNumLoops();
  auto maps = op.getIndexingMapsArray();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, op.getContext());
  if (maps[0] != id || maps[1] != id.dropResult(rank - 1) || maps[2] != id)
    return false;
  x = op.getDpsInputs()[0];
  row = op.getDpsInputs()[1];
  return true;
}

Value mlir::gated_attention::matchSoftmax(Value v) {
  if (auto softmax = v.getDefiningOp<linalg::SoftmaxOp>()) {
    auto type = cast<ShapedType>(softmax.getInput().getType());
    if (softmax.getDimension() != static_cast<uint64_t>(type.getRank() - 1))
      return {};
    return softmax.getInput();
  }
  auto div = v.getDefiningOp<linalg::GenericOp>();
  Value e, sum;
  if (!div || !isRowBroadcastBinary(div, e, sum))
    return {};
  Block *body = div.getBody();
  auto divf = yielded(div).getDefiningOp<arith::DivFOp>();
  if (!divf || divf.getLhs() != body->getArgument(0) ||
      divf.getRhs() != body->getArgument(1))
    return {};
  if (matchReductionFrom<arith::AddFOp>(sum, 0.0) != e)
    return {};
  // exp(x - max) in one generic, or exp of a generic computing x - max.
  auto expOp = e.getDefiningOp<linalg::GenericOp>();
  if (!expOp)
    return {};
  auto exp = yielded(expOp).getDefiningOp<math::ExpOp>();
  if (!exp)
    return {};
  linalg::GenericOp subOp = expOp;
  if (Value diff; isElementwise(expOp) && expOp.getNumResults() == 1 &&
                  expOp.getNumDpsInputs() == 1 &&
                  exp.getOperand() == expOp.getBody()->getArgument(0)) {
    diff = expOp.getDpsInputs()[0];
    subOp = diff.getDefiningOp<linalg::GenericOp>();
    if (!subOp || !diff.hasOneUse())
      return {};
  }
  Value x, max;
  if (!isRowBroadcastBinary(subOp, x, max))
    return {};
  Block *subBody = subOp.getBody();
  auto sub = subOp == expOp ? exp.getOperand().getDefiningOp<arith::SubFOp>()
                            : yielded(subOp).getDefiningOp<arith::SubFOp>();
  if (!sub || sub.getLhs() != subBody->getArgument(0) ||
      sub.getRhs() != subBody->getArgument(1))
    return {};
  double negInf = -std::numeric_limits<double>::infinity();
  Value maxIn = matchReductionFrom<arith::MaximumFOp>(max, negInf);
  if (!maxIn)
    maxIn = matchReductionFrom<arith::MaxNumFOp>(max, negInf);
  return maxIn == x ? x : Value();
}

Value mlir::gated_attention::matchScale(Value v, double &scale) {
  Value input;
  linalg::GenericOp op = matchUnaryElementwise(v, input);
  if (!op)
    return {};
  std::optional<double> c =
      matchConstantScale(yielded(op), op.getBody()->getArgument(0));
  if (!c)
    return {};
  scale = *c;
  return input;
}

std::optional<BatchedMatmul>
mlir::gated_attention::matchBatchedMatmul(Value v) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1 || dims->batch.empty() || dims->batch.size() > 2)
    return std::nullopt;
  if (!isFilledWith(op.getDpsInits()[0], 0.0))
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  auto map = [&](ArrayRef<unsigned> tail) {
    SmallVector<AffineExpr> exprs;
    for (unsigned b : dims->batch)
      exprs.push_back(getAffineDimExpr(b, ctx));
    for (unsigned d : tail)
      exprs.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(op.getNumLoops(), 0, exprs, ctx);
  };
  unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
  auto maps = op.getIndexingMapsArray();
  if (maps[0] != map({m, k}) || maps[2] != map({m, n}))
    return std::nullopt;
  BatchedMatmul result{op.getDpsInputs()[0], op.getDpsInputs()[1], false};
  if (maps[1] == map({n, k}))
    result.rhsTransposed = true;
  else if (maps[1] != map({k, n}))
    return std::nullopt;
  return result;
}

bool mlir::gated_attention::hasAttentionRank(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && (type.getRank() == 3 || type.getRank() == 4);
}

std::pair<Value, RankedTensorType> mlir::gated_attention::as4D(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 4)
    return {v, type};
  if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>())
    if (collapse.getSrcType().getRank() == 4 &&
        collapse.getReassociationIndices().size() == 3 &&
        collapse.getReassociationIndices()[0].size() == 2)
      return {collapse.getSrc(), collapse.getSrcType()};
  SmallVector<int64_t> shape = {1};
  llvm::append_range(shape, type.getShape());
  return {Value(), RankedTensorType::get(shape, type.getElementType())};
}

Value mlir::gated_attention::throughRepeat(Value v) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 5)
    return v;
  auto reassoc = collapse.getReassociationIndices();
  if (reassoc.size() != 4 || reassoc[1] != ReassociationIndices{1, 2})
    return v;
  // linalg.broadcast, or a generic that is one (torch-mlir's expand).
  if (auto bcast = collapse.getSrc().getDefiningOp<linalg::BroadcastOp>())
    return bcast.getDimensions() == ArrayRef<int64_t>{2} ? bcast.getInput() : v;
  auto generic = collapse.getSrc().getDefiningOp<linalg::GenericOp>();
  std::optional<SmallVector<int64_t>> dims =
      generic ? linalg::isaBroadcastOpInterface(generic) : std::nullopt;
  if (!dims || *dims != SmallVector<int64_t>{2})
    return v;
  return generic.getDpsInputs()[0];
}
