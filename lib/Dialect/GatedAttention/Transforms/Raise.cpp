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
// Hkv heads). The match is rooted at the gate combine and walks up; any
// mismatch leaves the IR untouched.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <map>
#include <optional>

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONRAISEPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

//===----------------------------------------------------------------------===//
// Scalar bodies
//===----------------------------------------------------------------------===//

/// The value of float constant `v` (an arith.constant, in or out of the
/// body, or one converted by truncf / extf, which frontends leave in
/// bodies: torch-mlir truncates its f64 scales there).
static std::optional<double> constantFloat(Value v) {
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble();
  Operation *op = v.getDefiningOp();
  if (!op || !isa<arith::TruncFOp, arith::ExtFOp>(op))
    return std::nullopt;
  if (!matchPattern(op->getOperand(0), m_Constant(&attr)))
    return std::nullopt;
  APFloat value = attr.getValue();
  bool lost;
  value.convert(cast<FloatType>(v.getType()).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
  return value.convertToDouble();
}

/// Whether `v` is the float constant `c`.
static bool isConstant(Value v, double c) {
  std::optional<double> value = constantFloat(v);
  return value && *value == c;
}

/// Binary op of type OpTy with operands {a, b} in either order; returns the
/// operand that is not `known`, or null.
template <typename OpTy>
static Value otherOperand(Value v, function_ref<bool(Value)> known) {
  auto op = v.getDefiningOp<OpTy>();
  if (!op)
    return {};
  if (known(op.getLhs()))
    return op.getRhs();
  if (known(op.getRhs()))
    return op.getLhs();
  return {};
}

/// x for -x spelled negf(x), 0 - x or x * -1; else null.
static Value negated(Value v) {
  if (auto neg = v.getDefiningOp<arith::NegFOp>())
    return neg.getOperand();
  if (auto sub = v.getDefiningOp<arith::SubFOp>())
    return isConstant(sub.getLhs(), 0.0) ? sub.getRhs() : Value();
  return otherOperand<arith::MulFOp>(v,
                                     [](Value c) { return isConstant(c, -1); });
}

/// y for 1 + exp(-y), the denominator of the sigmoid; else null.
static Value sigmoidDenominatorOf(Value v) {
  Value e =
      otherOperand<arith::AddFOp>(v, [](Value c) { return isConstant(c, 1); });
  auto exp = e ? e.getDefiningOp<math::ExpOp>() : nullptr;
  return exp ? negated(exp.getOperand()) : Value();
}

Value mlir::gated_attention::matchSigmoid(Value v) {
  auto div = v.getDefiningOp<arith::DivFOp>();
  if (!div || !isConstant(div.getLhs(), 1.0))
    return {};
  return sigmoidDenominatorOf(div.getRhs());
}

/// sigmoid(x) = 1 / (1 + exp(-x)).
static bool isSigmoid(Value v, Value x) { return x && matchSigmoid(v) == x; }

/// The built-in gate activation that `v` computes from `x`, if any.
static std::optional<GateKind> matchBuiltinActivation(Value v, Value x) {
  if (isSigmoid(v, x))
    return GateKind::sigmoid;
  // silu: x * sigmoid(x), or x / (1 + exp(-x)).
  if (Value s = otherOperand<arith::MulFOp>(v, [&](Value a) { return a == x; });
      s && isSigmoid(s, x))
    return GateKind::silu;
  if (auto div = v.getDefiningOp<arith::DivFOp>();
      div && div.getLhs() == x && sigmoidDenominatorOf(div.getRhs()) == x)
    return GateKind::silu;
  // ns_sigmoid: 0.5 + 0.5 * sigmoid(x).
  if (Value half = otherOperand<arith::AddFOp>(
          v, [](Value c) { return isConstant(c, 0.5); })) {
    Value s = otherOperand<arith::MulFOp>(
        half, [](Value c) { return isConstant(c, 0.5); });
    if (s && isSigmoid(s, x))
      return GateKind::ns_sigmoid;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Linalg structure
//===----------------------------------------------------------------------===//

/// The value yielded by a single-result generic's body.
static Value yielded(linalg::GenericOp op) {
  return cast<linalg::YieldOp>(op.getBody()->getTerminator()).getOperand(0);
}

/// An elementwise generic: all loops parallel, every map the identity.
static bool isElementwise(linalg::GenericOp op) {
  return op.getNumResults() == 1 &&
         op.getNumParallelLoops() == op.getNumLoops() &&
         llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); });
}

/// Whether `v` is a fill of constant `c`.
static bool isFilledWith(Value v, double c) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && isConstant(fill.value(), c);
}

/// A reduction of `x` over its last dimension with body `combine(arg, acc)`
/// from an init that `isInit` accepts: returns x.
template <typename CombineOp>
static Value matchLastDimReduction(Value v, function_ref<bool(Value)> isInit) {
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
  Block *body = op.getBody();
  Value result = yielded(op);
  auto combine = result.getDefiningOp<CombineOp>();
  if (!combine || !((combine.getLhs() == body->getArgument(0) &&
                     combine.getRhs() == body->getArgument(1)) ||
                    (combine.getRhs() == body->getArgument(0) &&
                     combine.getLhs() == body->getArgument(1))))
    return {};
  return op.getDpsInputs()[0];
}

template <typename CombineOp>
static Value matchLastDimReduction(Value v, double init) {
  return matchLastDimReduction<CombineOp>(
      v, [&](Value x) { return isFilledWith(x, init); });
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

/// softmax over the last dimension of the result: linalg.softmax, or the
/// decomposition max / exp(x - max) / sum / divide. Returns its input.
static Value matchSoftmax(Value v) {
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
  if (matchLastDimReduction<arith::AddFOp>(sum, 0.0) != e)
    return {};
  // exp(x - max) in one generic, or exp of a generic computing x - max.
  auto expOp = e.getDefiningOp<linalg::GenericOp>();
  if (!expOp)
    return {};
  auto exp = yielded(expOp).getDefiningOp<math::ExpOp>();
  if (!exp)
    return {};
  linalg::GenericOp subOp = expOp;
  if (Value diff; isElementwise(expOp) && expOp.getNumDpsInputs() == 1 &&
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
  Value maxIn = matchLastDimReduction<arith::MaximumFOp>(max, negInf);
  if (!maxIn)
    maxIn = matchLastDimReduction<arith::MaxNumFOp>(max, negInf);
  return maxIn == x ? x : Value();
}

/// An elementwise generic with one input (`input`) and a scalar body.
static linalg::GenericOp matchUnaryElementwise(Value v, Value &input) {
  auto op = v.getDefiningOp<linalg::GenericOp>();
  if (!op || !isElementwise(op) || op.getNumDpsInputs() != 1)
    return {};
  input = op.getDpsInputs()[0];
  return op;
}

std::optional<double> mlir::gated_attention::matchConstantScale(Value y,
                                                                Value x) {
  if (Value other =
          otherOperand<arith::MulFOp>(y, [&](Value a) { return a == x; }))
    return constantFloat(other);
  if (auto div = y.getDefiningOp<arith::DivFOp>(); div && div.getLhs() == x)
    if (std::optional<double> c = constantFloat(div.getRhs()))
      return 1.0 / *c;
  return std::nullopt;
}

/// S * c, c * S or S / c with a constant c: returns S and sets `scale`.
static Value matchScale(Value v, double &scale) {
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

namespace {
/// sum_d coeffs[d] * linalg.index(d) + constant, over integers.
struct IndexForm {
  // (A std::map: GCC 12 warns, wrongly, of an uninitialized SmallDenseMap
  // inside a returned std::optional.)
  std::map<int64_t, int64_t> coeffs;
  int64_t coeff(int64_t dim) const {
    auto it = coeffs.find(dim);
    return it == coeffs.end() ? 0 : it->second;
  }
  int64_t constant = 0;
  /// Every term non-negative (an unsigned comparison of it is a signed one).
  bool nonNegative() const {
    return constant >= 0 &&
           llvm::all_of(coeffs, [](const auto &kv) { return kv.second >= 0; });
  }
};
} // namespace

/// `v` as an IndexForm: linalg.index, integer constants, index_cast /
/// extsi / trunci, addi, subi and muli by a constant; else nullopt.
static std::optional<IndexForm> indexForm(Value v, int depth = 0) {
  if (depth > 16)
    return std::nullopt;
  IndexForm form;
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c))) {
    form.constant = c.getSExtValue();
    return form;
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    form.coeffs[index.getDim()] = 1;
    return form;
  }
  if (isa<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp>(op))
    return indexForm(op->getOperand(0), depth + 1);
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op))
    return std::nullopt;
  std::optional<IndexForm> lhs = indexForm(op->getOperand(0), depth + 1);
  std::optional<IndexForm> rhs = indexForm(op->getOperand(1), depth + 1);
  if (!lhs || !rhs)
    return std::nullopt;
  if (isa<arith::MulIOp>(op)) {
    // One side must be a constant.
    if (!lhs->coeffs.empty())
      std::swap(lhs, rhs);
    if (!lhs->coeffs.empty())
      return std::nullopt;
    for (auto &kv : rhs->coeffs)
      kv.second *= lhs->constant;
    rhs->constant *= lhs->constant;
    return rhs;
  }
  int64_t sign = isa<arith::SubIOp>(op) ? -1 : 1;
  for (auto &kv : rhs->coeffs)
    lhs->coeffs[kv.first] += sign * kv.second;
  lhs->constant += sign * rhs->constant;
  return lhs;
}

/// For a comparison of linalg indices (key j = dim `rank - 1`, query i =
/// dim `rank - 2`) that holds exactly when `j <= i + c` ("visible" form), or
/// exactly when `j > i + c`: sets c and which form it is.
static bool matchKeyQueryComparison(Value cond, int64_t rank, int64_t &c,
                                    bool &visibleForm) {
  auto cmp = cond.getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return false;
  std::optional<IndexForm> lhs = indexForm(cmp.getLhs());
  std::optional<IndexForm> rhs = indexForm(cmp.getRhs());
  if (!lhs || !rhs)
    return false;
  using P = arith::CmpIPredicate;
  bool less, strict; // e < 0 / e <= 0 (less), else e > 0 / e >= 0
  switch (cmp.getPredicate()) {
  case P::slt:
  case P::ult:
    less = true, strict = true;
    break;
  case P::sle:
  case P::ule:
    less = true, strict = false;
    break;
  case P::sgt:
  case P::ugt:
    less = false, strict = true;
    break;
  case P::sge:
  case P::uge:
    less = false, strict = false;
    break;
  default:
    return false;
  }
  // Unsigned comparisons are signed ones only on non-negative sides.
  bool isUnsigned =
      llvm::is_contained({P::ult, P::ule, P::ugt, P::uge}, cmp.getPredicate());
  if (isUnsigned && (!lhs->nonNegative() || !rhs->nonNegative()))
    return false;
  // e = lhs - rhs = a j + b i + g, compared with 0.
  IndexForm e = *lhs;
  for (auto &kv : rhs->coeffs)
    e.coeffs[kv.first] -= kv.second;
  e.constant -= rhs->constant;
  for (auto &kv : e.coeffs)
    if (kv.second != 0 && kv.first != rank - 1 && kv.first != rank - 2)
      return false;
  int64_t a = e.coeff(rank - 1), b = e.coeff(rank - 2);
  // Make e = j - i + g by negating it (and the comparison) if needed.
  if (a == -1 && b == 1) {
    a = 1, b = -1;
    e.constant = -e.constant;
    less = !less;
  }
  if (a != 1 || b != -1)
    return false;
  // j - i + g < 0 <=> j <= i - g - 1;  j - i + g <= 0 <=> j <= i - g;
  // > 0 and >= 0 are the negations of <= 0 and < 0.
  visibleForm = less;
  c = -e.constant - (less == strict ? 1 : 0);
  return true;
}

/// The body of a causal mask: `select(cond, s, -inf)` (or the branches
/// swapped) or `s + select(cond, 0, -inf)` (torch's additive mask; or
/// swapped), `arg` being the score s. Sets `cond` and whether the select
/// keeps the score when it is true.
static bool matchMaskBody(Value result, Value arg, Value &cond,
                          bool &keepIfTrue) {
  double negInf = -std::numeric_limits<double>::infinity();
  auto pick = [&](arith::SelectOp select, function_ref<bool(Value)> kept) {
    if (!select)
      return false;
    cond = select.getCondition();
    if (kept(select.getTrueValue()) &&
        isConstant(select.getFalseValue(), negInf)) {
      keepIfTrue = true;
      return true;
    }
    if (kept(select.getFalseValue()) &&
        isConstant(select.getTrueValue(), negInf)) {
      keepIfTrue = false;
      return true;
    }
    return false;
  };
  if (pick(result.getDefiningOp<arith::SelectOp>(),
           [&](Value v) { return v == arg; }))
    return true;
  Value added =
      otherOperand<arith::AddFOp>(result, [&](Value v) { return v == arg; });
  return added && pick(added.getDefiningOp<arith::SelectOp>(),
                       [](Value v) { return isConstant(v, 0.0); });
}

/// The bottom-right causal mask added as a constant: S + M with M an
/// [Sq, Skv] (or full-shape) constant that is 0 where j <= i + (Skv - Sq)
/// and -inf elsewhere. Returns S.
static Value matchAddedCausalTriangle(Value v) {
  auto op = v.getDefiningOp<linalg::GenericOp>();
  if (!op || op.getNumDpsInputs() != 2 || op.getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return {};
  int64_t rank = op.getNumLoops();
  auto type = cast<ShapedType>(op.getResult(0).getType());
  if (type.isDynamicDim(rank - 1) || type.isDynamicDim(rank - 2))
    return {};
  int64_t sq = type.getDimSize(rank - 2), skv = type.getDimSize(rank - 1);
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, op.getContext());
  auto maps = op.getIndexingMapsArray();
  if (maps[2] != id)
    return {};
  auto add = yielded(op).getDefiningOp<arith::AddFOp>();
  Block *body = op.getBody();
  if (!add)
    return {};
  for (int side = 0; side < 2; ++side) {
    Value scoresArg = body->getArgument(side);
    Value maskArg = body->getArgument(1 - side);
    if (!((add.getLhs() == scoresArg && add.getRhs() == maskArg) ||
          (add.getRhs() == scoresArg && add.getLhs() == maskArg)))
      continue;
    if (maps[side] != id)
      continue;
    // The mask: indexed by (i, j) only, or the full identity.
    AffineMap maskMap = maps[1 - side];
    bool lastTwo = maskMap == id.getSubMap({static_cast<unsigned>(rank - 2),
                                            static_cast<unsigned>(rank - 1)});
    if (!lastTwo && maskMap != id)
      continue;
    DenseElementsAttr mask;
    if (!matchPattern(op.getDpsInputs()[1 - side], m_Constant(&mask)))
      continue;
    auto values = llvm::to_vector(mask.getValues<APFloat>());
    int64_t slices = static_cast<int64_t>(values.size()) / (sq * skv);
    if (slices * sq * skv != static_cast<int64_t>(values.size()))
      continue;
    bool causal = true;
    for (int64_t n = 0; n < slices && causal; ++n)
      for (int64_t i = 0; i < sq && causal; ++i)
        for (int64_t j = 0; j < skv && causal; ++j) {
          const APFloat &x = values[(n * sq + i) * skv + j];
          causal = j <= i + (skv - sq) ? x.isZero()
                                       : (x.isInfinity() && x.isNegative());
        }
    if (causal)
      return op.getDpsInputs()[side];
  }
  return {};
}

/// The bottom-right causal mask: S where key j <= query i + (Skv - Sq), -inf
/// elsewhere, as a select on (or an added select of 0 / -inf on) a
/// comparison of linalg.index values, or an added constant triangle.
/// (torch's `is_causal` is top-left, j <= i: the same when Sq == Skv, and
/// not raised otherwise.) Returns S.
static Value matchCausalMask(Value v) {
  if (Value s = matchAddedCausalTriangle(v))
    return s;
  Value input;
  linalg::GenericOp op = matchUnaryElementwise(v, input);
  if (!op)
    return {};
  auto type = cast<ShapedType>(input.getType());
  int64_t rank = type.getRank();
  if (type.isDynamicDim(rank - 1) || type.isDynamicDim(rank - 2))
    return {};
  int64_t offset = type.getDimSize(rank - 1) - type.getDimSize(rank - 2);
  Value cond;
  bool keepIfTrue, visibleForm;
  int64_t c;
  if (!matchMaskBody(yielded(op), op.getBody()->getArgument(0), cond,
                     keepIfTrue) ||
      !matchKeyQueryComparison(cond, rank, c, visibleForm))
    return {};
  if (visibleForm != keepIfTrue || c != offset)
    return {};
  return input;
}

/// torch's guard for rows that see no key: `select(all_j(S == -inf), 0, P)`,
/// the flag an and-reduction over the keys of `S == -inf` (S perhaps
/// extended to f64 first). The op gives such rows 0 already: returns P and
/// sets `scores` to S (which must be the softmax's input).
static Value matchEmptyRowGuard(Value v, Value &scores) {
  auto op = v.getDefiningOp<linalg::GenericOp>();
  if (!op || op.getNumDpsInputs() != 2 || op.getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return {};
  int64_t rank = op.getNumLoops();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, op.getContext());
  auto maps = op.getIndexingMapsArray();
  if (maps[0] != id.dropResult(rank - 1) || maps[1] != id || maps[2] != id)
    return {};
  Block *body = op.getBody();
  auto select = yielded(op).getDefiningOp<arith::SelectOp>();
  if (!select || select.getCondition() != body->getArgument(0) ||
      !isConstant(select.getTrueValue(), 0.0) ||
      select.getFalseValue() != body->getArgument(1))
    return {};
  Value masked = matchLastDimReduction<arith::AndIOp>(
      op.getDpsInputs()[0], [](Value init) {
        auto fill = init.getDefiningOp<linalg::FillOp>();
        return fill && matchPattern(fill.value(), m_One());
      });
  Value input;
  linalg::GenericOp isInf =
      masked ? matchUnaryElementwise(masked, input) : linalg::GenericOp();
  if (!isInf)
    return {};
  auto cmp = yielded(isInf).getDefiningOp<arith::CmpFOp>();
  double negInf = -std::numeric_limits<double>::infinity();
  if (!cmp || cmp.getPredicate() != arith::CmpFPredicate::OEQ ||
      !isConstant(cmp.getRhs(), negInf))
    return {};
  Value x = cmp.getLhs();
  if (auto ext = x.getDefiningOp<arith::ExtFOp>())
    x = ext.getIn();
  if (x != isInf.getBody()->getArgument(0))
    return {};
  scores = input;
  return op.getDpsInputs()[1];
}

namespace {
/// A batched contraction C[batch..., m, n] = sum_k A[batch..., m, k] *
/// B[batch..., k, n] (or B[batch..., n, k] when `rhsTransposed`).
struct BatchedMatmul {
  Value lhs, rhs;
  bool rhsTransposed;
};
} // namespace

static std::optional<BatchedMatmul> matchBatchedMatmul(Value v) {
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

/// `v` as [B, H, S, D]: itself when 4-D; the source of a collapse_shape
/// [[0, 1], [2], [3]] of a 4-D tensor when 3-D; else (null, the type of `v`
/// with a unit batch in front), to be materialized by `materialize4D`.
static std::pair<Value, RankedTensorType> as4D(Value v) {
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

static Value materialize4D(OpBuilder &b, Location loc, Value v) {
  auto [lifted, type] = as4D(v);
  if (lifted)
    return lifted;
  return tensor::ExpandShapeOp::create(
      b, loc, type, v, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// K or V as the op reads them: a GQA repetition (linalg.broadcast of
/// [B, Hkv, S, D] to [B, Hkv, R, S, D] collapsed to [B, Hkv * R, S, D]) is
/// looked through.
static Value throughRepeat(Value v) {
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

/// Rank of the unfused tensors must be 3 (heads in the batch) or 4.
static bool hasAttentionRank(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && (type.getRank() == 3 || type.getRank() == 4);
}

namespace {
/// The gate combine `O * act(G)` / `O + act(G)` of a generic.
struct GateCombine {
  Value attention, gate;
  GateFunctionAttrInterface function;
  CombineKind combine;
  /// How the combine reads the gate: the identity (per element and head),
  /// or without the last dimension (headwise) and/or, on [B, H, S, D],
  /// without the heads (shared).
  AffineMap map;
  /// The combine reads `gate` collapsed this way (the activation computed
  /// before unit dims were dropped), if not empty.
  SmallVector<ReassociationIndices> collapse;
};

/// Q Kᵀ -> [scale] -> [causal mask] -> softmax -> P V, ending at `O`.
struct AttentionChain {
  Value query, key, value, scores;
  double scale = 1.0;
  bool causal = false;
};
} // namespace

/// Whether the combine may read the gate through `map` (of `rank` dims):
/// an ordered subset of the identity keeping the batch (or batch·heads) and
/// the rows; the heads (4-D) and the last dimension may be broadcast.
static bool isGateMap(AffineMap map, int64_t rank) {
  if (!map.isProjectedPermutation())
    return false;
  SmallVector<int64_t> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(cast<AffineDimExpr>(e).getPosition());
  return llvm::is_sorted(dims) && llvm::is_contained(dims, 0) &&
         llvm::is_contained(dims, rank - 2);
}

static std::optional<GateCombine>
matchGateCombine(linalg::GenericOp root, const GateActivationMatcher &matcher) {
  if (root.getNumResults() != 1 || root.getNumDpsInputs() != 2 ||
      root.getNumParallelLoops() != root.getNumLoops() ||
      !hasAttentionRank(root.getResult(0)))
    return std::nullopt;
  // The output and the attention input are read at every element, the
  // gate as isGateMap allows.
  int64_t rank = root.getNumLoops();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, root.getContext());
  SmallVector<AffineMap> maps = root.getIndexingMapsArray();
  if (maps[2] != id)
    return std::nullopt;
  Block *body = root.getBody();
  auto *combineOp = yielded(root).getDefiningOp();
  if (!combineOp || !isa<arith::MulFOp, arith::AddFOp>(combineOp))
    return std::nullopt;
  CombineKind combine =
      isa<arith::MulFOp>(combineOp) ? CombineKind::mul : CombineKind::add;
  // One side is the attention output (an input of the generic as is), the
  // other the activation of the gate input, in this body or in an
  // elementwise producer of the gate operand.
  for (int side = 0; side < 2; ++side) {
    auto arg = dyn_cast<BlockArgument>(combineOp->getOperand(side));
    Value act = combineOp->getOperand(1 - side);
    if (!arg || arg.getOwner() != body || arg.getArgNumber() > 1)
      continue;
    unsigned other = 1 - arg.getArgNumber();
    if (maps[arg.getArgNumber()] != id || !isGateMap(maps[other], rank))
      continue;
    Value attention = root.getDpsInputs()[arg.getArgNumber()];
    if (auto fn = dyn_cast_or_null<GateFunctionAttrInterface>(
            matcher(act, body->getArgument(other))))
      return GateCombine{
          attention, root.getDpsInputs()[other], fn, combine, maps[other], {}};
    if (act != body->getArgument(other))
      continue;
    Value input, activated = root.getDpsInputs()[other];
    SmallVector<ReassociationIndices> collapse;
    if (auto c = activated.getDefiningOp<tensor::CollapseShapeOp>()) {
      activated = c.getSrc();
      collapse = c.getReassociationIndices();
    }
    if (linalg::GenericOp actOp = matchUnaryElementwise(activated, input))
      if (auto fn = dyn_cast_or_null<GateFunctionAttrInterface>(
              matcher(yielded(actOp), actOp.getBody()->getArgument(0))))
        return GateCombine{attention, input,       fn,
                           combine,   maps[other], collapse};
  }
  return std::nullopt;
}

/// The attention chain ending at `out`.
static std::optional<AttentionChain> matchAttentionChain(Value out) {
  std::optional<BatchedMatmul> pv = matchBatchedMatmul(out);
  if (!pv || pv->rhsTransposed)
    return std::nullopt;
  AttentionChain chain;
  chain.value = pv->rhs;
  Value probabilities = pv->lhs, guarded;
  if (Value p = matchEmptyRowGuard(probabilities, guarded))
    probabilities = p;
  Value scores = matchSoftmax(probabilities);
  if (!scores || (guarded && guarded != scores))
    return std::nullopt;
  if (Value unmasked = matchCausalMask(scores)) {
    chain.causal = true;
    scores = unmasked;
  }
  // Constant factors on the scores, on Q, or on K (before or after its
  // transpose; torch scales Q and Kᵀ by sqrt(scale) each) multiply up.
  auto unscale = [&](Value v) {
    double factor;
    while (Value unscaled = matchScale(v, factor)) {
      chain.scale *= factor;
      v = unscaled;
    }
    return v;
  };
  scores = unscale(scores);
  std::optional<BatchedMatmul> qk = matchBatchedMatmul(scores);
  if (!qk)
    return std::nullopt;
  chain.scores = scores;
  chain.query = unscale(qk->lhs);
  chain.key = unscale(qk->rhs);
  if (!qk->rhsTransposed) {
    // Kᵀ made explicitly: a transpose of the last two dimensions.
    auto transpose = chain.key.getDefiningOp<linalg::TransposeOp>();
    int64_t rank = cast<ShapedType>(chain.key.getType()).getRank();
    SmallVector<int64_t> swapLast = llvm::to_vector(llvm::seq<int64_t>(rank));
    std::swap(swapLast[rank - 1], swapLast[rank - 2]);
    if (!transpose || transpose.getPermutation() != ArrayRef(swapLast))
      return std::nullopt;
    chain.key = unscale(transpose.getInput());
  }
  return chain;
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

/// Whether the ops from the Q Kᵀ contraction to `root` are used only by one
/// another and `root`: otherwise raising would keep the scores alive and
/// compute the attention twice (a gate computed from the scores, say).
static bool isPrivateChain(Operation *root, Value scores) {
  Operation *first = scores.getDefiningOp();
  SetVector<Operation *> above, chain;
  BackwardSliceOptions backward;
  backward.inclusive = true;
  (void)getBackwardSlice(root, &above, backward);
  // The ops between `first` and `root`: reached from `first` without
  // leaving what `root` depends on.
  ForwardSliceOptions forward;
  forward.inclusive = true;
  forward.filter = [&](Operation *op) { return above.contains(op); };
  getForwardSlice(first, &chain, forward);
  return llvm::all_of(chain, [&](Operation *op) {
    return op == root || llvm::all_of(op->getUsers(), [&](Operation *user) {
             return chain.contains(user);
           });
  });
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
      rewriter, loc, resultType, q, k, v, /*gate=*/Value(),
      rewriter.getF32FloatAttr(static_cast<float>(chain.scale)), chain.causal,
      GateKindAttr::get(rewriter.getContext(), GateKind::sigmoid),
      CombineKind::mul);
  rewriter.replaceOp(root, reshapeResult(rewriter, loc, op, rootType));
  return success();
}

/// The ungated op whose result `v` is, as is or through reshapes, every
/// value on the way used once (by the next step and finally the combine).
static AttentionOp ungatedSource(Value v) {
  while (v.hasOneUse()) {
    if (auto op = v.getDefiningOp<AttentionOp>())
      return op.hasGate() ? AttentionOp() : op;
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
    auto resultType = cast<RankedTensorType>(ungated.getType());
    Type rootType = root.getResult(0).getType();
    if (!fitsResult(resultType, rootType) ||
        gate->attention.getType() != rootType ||
        getElementTypeOrSelf(gate->gate) != resultType.getElementType())
      return rewriter.notifyMatchFailure(root, "types do not fit the op");

    Location loc = root.getLoc();
    Value read = gate->gate;
    if (!gate->collapse.empty())
      read =
          tensor::CollapseShapeOp::create(rewriter, loc, read, gate->collapse);
    Value g = gateOperand(rewriter, loc, read, gate->map, resultType);
    auto op = AttentionOp::create(rewriter, loc, resultType, ungated.getQuery(),
                                  ungated.getKey(), ungated.getValue(), g,
                                  ungated.getScaleAttr(), ungated.getCausal(),
                                  gate->function, gate->combine);
    rewriter.replaceOp(root, reshapeResult(rewriter, loc, op, rootType));
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
