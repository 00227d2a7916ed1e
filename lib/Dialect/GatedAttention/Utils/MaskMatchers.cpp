//===- MaskMatchers.cpp - causal masks and the empty-row guard ------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Frontends write the causal mask many ways: a select on a comparison of
// linalg.index values (any linear form of i and j that means j <= i + c),
// an added select of 0 / -inf (torch), or an added constant triangle. All
// reduce to the offset c, which must be the bottom-right Skv - Sq.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
/// sum_d coeffs[d] * linalg.index(d) + constant, over the integers, with
/// the range [lo, hi] it takes over the op's iteration domain.
struct IndexForm {
  // (A std::map: GCC 12 warns, wrongly, of an uninitialized SmallDenseMap
  // inside a returned std::optional.)
  std::map<int64_t, int64_t> coeffs;
  int64_t coeff(int64_t dim) const {
    auto it = coeffs.find(dim);
    return it == coeffs.end() ? 0 : it->second;
  }
  int64_t constant = 0;
  int64_t lo = 0, hi = 0;
};
} // namespace

/// Whether every value of [lo, hi] is a signed integer of `type`'s width
/// (index: 64 bits), i.e. computing in `type` does not wrap.
static bool fitsSigned(const IndexForm &form, Type type) {
  unsigned width = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  if (width >= 64)
    return true;
  if (width == 0)
    return false;
  int64_t max = (int64_t(1) << (width - 1)) - 1;
  return form.lo >= -max - 1 && form.hi <= max;
}

/// `v` as an IndexForm: linalg.index of a static dimension, integer
/// constants, addi, subi, muli by a constant, and the casts (index_cast,
/// index_castui, extsi, extui, trunci), each only where no value of it
/// wraps in its type: the form is then the exact integer that `v` holds
/// (as a signed value) at every point of the domain. Else nullopt.
static std::optional<IndexForm> indexForm(Value v, int depth = 0) {
  if (depth > 16 || !v.getType().isIntOrIndex())
    return std::nullopt;
  std::optional<IndexForm> form = IndexForm();
  APInt c;
  Operation *op = v.getDefiningOp();
  if (matchPattern(v, m_ConstantInt(&c))) {
    form->constant = form->lo = form->hi = c.getSExtValue();
  } else if (!op) {
    return std::nullopt;
  } else if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    auto linalgOp = index->getParentOfType<linalg::LinalgOp>();
    if (!linalgOp)
      return std::nullopt;
    SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
    int64_t dim = index.getDim();
    if (dim >= static_cast<int64_t>(ranges.size()) ||
        ShapedType::isDynamic(ranges[dim]) || ranges[dim] <= 0)
      return std::nullopt;
    form->coeffs[dim] = 1;
    form->hi = ranges[dim] - 1;
  } else if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
                 arith::ExtUIOp, arith::TruncIOp>(op)) {
    form = indexForm(op->getOperand(0), depth + 1);
    // Zero extension reads the source as unsigned: the same integer only
    // where it is non-negative.
    if (form && isa<arith::IndexCastUIOp, arith::ExtUIOp>(op) && form->lo < 0)
      return std::nullopt;
  } else if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
    std::optional<IndexForm> lhs = indexForm(op->getOperand(0), depth + 1);
    std::optional<IndexForm> rhs = indexForm(op->getOperand(1), depth + 1);
    if (!lhs || !rhs)
      return std::nullopt;
    bool overflow = false;
    auto add = [&](int64_t a, int64_t b) {
      int64_t r;
      overflow |= llvm::AddOverflow(a, b, r);
      return r;
    };
    auto mul = [&](int64_t a, int64_t b) {
      int64_t r;
      overflow |= llvm::MulOverflow(a, b, r);
      return r;
    };
    if (isa<arith::MulIOp>(op)) {
      // One side must be a constant.
      if (!lhs->coeffs.empty())
        std::swap(lhs, rhs);
      if (!lhs->coeffs.empty())
        return std::nullopt;
      int64_t k = lhs->constant;
      for (auto &kv : rhs->coeffs)
        kv.second = mul(kv.second, k);
      rhs->constant = mul(rhs->constant, k);
      int64_t a = mul(rhs->lo, k), b = mul(rhs->hi, k);
      rhs->lo = std::min(a, b), rhs->hi = std::max(a, b);
      form = rhs;
    } else {
      int64_t sign = isa<arith::SubIOp>(op) ? -1 : 1;
      for (auto &kv : rhs->coeffs)
        lhs->coeffs[kv.first] = add(lhs->coeffs[kv.first], sign * kv.second);
      lhs->constant = add(lhs->constant, mul(sign, rhs->constant));
      // Interval arithmetic: an over-approximation where a dimension
      // appears on both sides, which only rejects more.
      int64_t lo = sign > 0 ? rhs->lo : mul(-1, rhs->hi);
      int64_t hi = sign > 0 ? rhs->hi : mul(-1, rhs->lo);
      lhs->lo = add(lhs->lo, lo), lhs->hi = add(lhs->hi, hi);
      form = lhs;
    }
    if (overflow)
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (!form || !fitsSigned(*form, v.getType()))
    return std::nullopt;
  return form;
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
  // Unsigned comparisons are signed ones only where both sides are
  // non-negative at every point of the domain.
  bool isUnsigned =
      llvm::is_contained({P::ult, P::ule, P::ugt, P::uge}, cmp.getPredicate());
  if (isUnsigned && (lhs->lo < 0 || rhs->lo < 0))
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

/// Whether `v` is a constant that masks a score: -inf, or (with
/// `lowestToo`) the lowest finite value of its type, which frontends use
/// instead (HF transformers' `torch.finfo(dtype).min`). Added to a score,
/// the lowest value still gives it weight 0 wherever its row sees a key
/// whose score is within half the float range of it; a row that sees no key
/// would get the mean of V instead of the op's 0, so the caller allows it
/// only where every row sees a key.
static bool isMaskFloat(const APFloat &x, bool lowestToo) {
  return x.isNegative() &&
         (x.isInfinity() ||
          (lowestToo && x == APFloat::getLargest(x.getSemantics(),
                                                 /*Negative=*/true)));
}

static bool isMaskValue(Value v, bool lowestToo) {
  std::optional<double> x = constantFloat(v);
  auto type = dyn_cast<FloatType>(v.getType());
  if (!x || !type)
    return false;
  bool lost;
  APFloat value(*x);
  value.convert(type.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return isMaskFloat(value, lowestToo);
}

/// The body of a causal mask: `select(cond, s, m)` (or the branches
/// swapped) or `s + select(cond, 0, m)` (torch's additive mask; or
/// swapped), m a mask value (isMaskValue), s the score `arg` or a constant
/// multiple of it (the scale fused into the mask's generic, as HF's eager
/// attention writes `QKᵀ * scaling + mask`). Sets `cond`, whether the
/// select keeps the score when it is true, and `scale` (1 if none).
static bool matchMaskBody(Value result, Value arg, bool lowestToo, Value &cond,
                          bool &keepIfTrue, double &scale) {
  auto pick = [&](arith::SelectOp select, function_ref<bool(Value)> kept) {
    if (!select)
      return false;
    cond = select.getCondition();
    if (kept(select.getTrueValue()) &&
        isMaskValue(select.getFalseValue(), lowestToo)) {
      keepIfTrue = true;
      return true;
    }
    if (kept(select.getFalseValue()) &&
        isMaskValue(select.getTrueValue(), lowestToo)) {
      keepIfTrue = false;
      return true;
    }
    return false;
  };
  scale = 1.0;
  auto isScore = [&](Value v) {
    if (v == arg)
      return true;
    std::optional<double> c = matchConstantScale(v, arg);
    if (c)
      scale = *c;
    return c.has_value();
  };
  if (pick(result.getDefiningOp<arith::SelectOp>(), isScore))
    return true;
  scale = 1.0;
  Value added = otherOperand<arith::AddFOp>(result, isScore);
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
          causal = j <= i + (skv - sq) ? x.isZero() : isMaskFloat(x, sq <= skv);
        }
    if (causal)
      return op.getDpsInputs()[side];
  }
  return {};
}

/// The bottom-right causal mask as a select whose condition is read from a
/// constant (nanoGPT's `masked_fill(bias[:, :, :S, :S] == 0, -inf)`, a
/// registered lower triangle of ones): `op` reads the scores and a mask
/// operand computed from constants, and the condition, evaluated at every
/// point of the dimensions it can depend on, is the diagonal's. Returns the
/// scores and sets `scale` as matchMaskBody does.
static Value matchSelectedConstantMask(Value v, double &scale) {
  auto op = v.getDefiningOp<linalg::GenericOp>();
  if (!op || op.getNumDpsInputs() != 2 || op.getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.hasPureTensorSemantics())
    return {};
  int64_t rank = op.getNumLoops();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (rank < 2 || !maps[2].isIdentity() ||
      llvm::any_of(ranges, ShapedType::isDynamic))
    return {};
  int64_t sq = ranges[rank - 2], skv = ranges[rank - 1];
  for (int side = 0; side < 2; ++side) {
    Value cond;
    bool keepIfTrue;
    if (!maps[side].isIdentity() ||
        !matchMaskBody(yielded(op), op.getBody()->getArgument(side),
                       /*lowestToo=*/skv >= sq, cond, keepIfTrue, scale))
      continue;
    // The dimensions the condition can depend on: the mask operand's and
    // those of the linalg indices in the body; the others are 0.
    llvm::SmallBitVector used(rank);
    used.set(rank - 2), used.set(rank - 1);
    for (AffineExpr e : maps[1 - side].getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e))
        used.set(d.getPosition());
    op.getBody()->walk([&](linalg::IndexOp i) { used.set(i.getDim()); });
    // Bounded (about a second a million points; 2048 x 2048 is 4M): beyond
    // it the mask is left as it is, computed unfused.
    int64_t points = 1;
    for (int64_t d : used.set_bits())
      if ((points *= ranges[d]) > (int64_t(1) << 22))
        return {};
    SmallVector<int64_t> loops(rank, 0);
    bool causal = true;
    for (int64_t n = 0; n < points && causal; ++n) {
      int64_t rest = n;
      for (int64_t d = rank - 1; d >= 0; --d)
        if (used[d]) {
          loops[d] = rest % ranges[d];
          rest /= ranges[d];
        }
      std::optional<ConstantElement> c = constantScalarAt(op, cond, loops);
      auto *bit = c ? std::get_if<APInt>(&*c) : nullptr;
      bool visible = loops[rank - 1] <= loops[rank - 2] + (skv - sq);
      causal = bit && bit->getBitWidth() == 1 &&
               bit->isOne() == (keepIfTrue == visible);
    }
    if (causal)
      return op.getDpsInputs()[side];
  }
  return {};
}

/// The mask as a select or an added select on a comparison of linalg
/// indices (matchKeyQueryComparison), in a one-input generic.
static Value matchIndexComparisonMask(Value v, double &scale) {
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
  // With Skv >= Sq every row sees key 0, so the lowest finite value masks
  // as -inf does.
  if (!matchMaskBody(yielded(op), op.getBody()->getArgument(0),
                     /*lowestToo=*/offset >= 0, cond, keepIfTrue, scale) ||
      !matchKeyQueryComparison(cond, rank, c, visibleForm))
    return {};
  if (visibleForm != keepIfTrue || c != offset)
    return {};
  return input;
}

Value mlir::gated_attention::matchCausalMask(Value v, double *scale) {
  double factor = 1.0;
  Value s = matchAddedCausalTriangle(v);
  if (!s)
    s = matchSelectedConstantMask(v, factor);
  if (!s)
    s = matchIndexComparisonMask(v, factor);
  if (!s || (factor != 1.0 && !scale))
    return {};
  if (scale)
    *scale = factor;
  return s;
}

Value mlir::gated_attention::matchEmptyRowGuard(Value v, Value &scores) {
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
  Value masked = matchLastDimReduction(
      op.getDpsInputs()[0],
      [](Operation *combine) { return isa<arith::AndIOp>(combine); },
      [](Value init) {
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
