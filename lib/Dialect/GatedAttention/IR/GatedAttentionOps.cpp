//===- GatedAttentionOps.cpp - gated_attention ops ------------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "VerifierSupport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/InterleavedRange.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;

#define GET_OP_CLASSES
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.cpp.inc"

float mlir::gated_attention::scaleOrDefault(std::optional<APFloat> scale,
                                            int64_t headDim) {
  if (scale)
    return scale->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(headDim));
}

LogicalResult mlir::gated_attention::verifyScale(Operation *op,
                                                 std::optional<APFloat> scale) {
  if (!scale)
    return success();
  double s = scale->convertToDouble();
  if (!std::isfinite(s) || s <= 0.0)
    return op->emitOpError()
           << "scale must be a finite positive number, got " << s;
  return success();
}

float AttentionOp::getScaleValue() {
  return scaleOrDefault(getScale(), getHeadDim());
}

LogicalResult ShapeDiagnostics::fitsAddressSpace(StringRef what,
                                                 ArrayRef<int64_t> shape) {
  uint64_t elements = 1;
  for (int64_t size : shape) {
    if (ShapedType::isDynamic(size) || size == 0)
      continue;
    if (static_cast<uint64_t>(size) > kMaxElements / elements)
      return op->emitOpError()
             << what << " has more than 2^48 elements (sizes "
             << llvm::interleaved(llvm::map_range(shape, printSize), " x ")
             << ")";
    elements *= size;
  }
  return success();
}

LogicalResult ShapeDiagnostics::boundedOperand(StringRef name,
                                               RankedTensorType type) {
  if (failed(fitsAddressSpace(name, type.getShape())))
    return failure();
  unsigned last = type.getRank() - 1;
  if (type.getDimSize(last) > kMaxHeadDim)
    return fail(name, last, "head dim") << "must be at most " << kMaxHeadDim
                                        << ", got " << type.getDimSize(last);
  return success();
}

LogicalResult ShapeDiagnostics::dividesHeads(StringRef operand, unsigned dim,
                                             int64_t hkv, int64_t hq) {
  if (hkv != 0 && hq % hkv == 0)
    return success();
  return fail(operand, dim, "Hkv")
         << "must divide the query head count Hq = " << hq << ", got " << hkv;
}

LogicalResult ShapeDiagnostics::sameFloatType(
    RankedTensorType query,
    ArrayRef<std::pair<StringRef, RankedTensorType>> others, bool allowF64) {
  Type elementType = query.getElementType();
  if (elementType.isF64() && !allowF64)
    return op->emitOpError() << "query element type must be f32, f16 or bf16 "
                                "(this op has no f64 form), got f64";
  if (!elementType.isF32() && !elementType.isF16() && !elementType.isBF16() &&
      !elementType.isF64())
    return op->emitOpError()
           << "query element type must be f32, f16, bf16"
           << (allowF64 ? " or f64" : "") << ", got " << elementType;
  for (auto [name, type] : others)
    if (type.getElementType() != elementType)
      return op->emitOpError()
             << name << " element type must be " << elementType
             << " (the query element type), got " << type.getElementType();
  return success();
}

LogicalResult ShapeDiagnostics::gateLayout(int64_t hg, int64_t dg, int64_t hq,
                                           int64_t dv, unsigned headDim,
                                           unsigned widthDim) {
  if (hg != hq && hg != 1)
    return fail("gate", headDim, "Hg")
           << "must be " << hq << " (per-head gate) or 1 (shared gate), got "
           << hg;
  if (dg != dv && dg != 1)
    return fail("gate", widthDim, "Dg")
           << "must be " << dv
           << " (elementwise gate) or 1 (headwise gate), got " << dg;
  return success();
}

LogicalResult ShapeDiagnostics::logSumExp(StringRef name, RankedTensorType lse,
                                          RankedTensorType query) {
  if (failed(hasRank(name, lse, 3, "B x Hq x Sq")))
    return failure();
  Type accumulator = getAccumulatorType(query.getElementType());
  if (lse.getElementType() != accumulator)
    return op->emitOpError()
           << name << " element type must be " << accumulator
           << " (the log-sum-exp is kept in the accumulator type, the wider "
           << "of f32 and the query's " << query.getElementType() << "), got "
           << lse.getElementType();
  if (failed(isStatic(name, lse, 1, "Hq")) ||
      failed(matches(name, lse, 0, "B", query.getDimSize(0))) ||
      failed(matches(name, lse, 1, "Hq", query.getDimSize(1))) ||
      failed(matches(name, lse, 2, "Sq", query.getDimSize(2))))
    return failure();
  return fitsAddressSpace(name, lse.getShape());
}

LogicalResult DenseShapeContract::verify() {
  struct Operand {
    StringRef name;
    RankedTensorType type;
    StringRef layout;
  };
  SmallVector<Operand, 5> operands = {{"query", q, "B x Hq x Sq x D"},
                                      {"key", k, "B x Hkv x Skv x D"},
                                      {"value", v, "B x Hkv x Skv x Dv"},
                                      {resultName, r, "B x Hq x Sq x Dv"}};
  if (g)
    operands.insert(operands.begin() + 3, {"gate", g, "B x Hg x Sq x Dg"});

  for (const Operand &o : operands)
    if (failed(hasRank(o.name, o.type, 4, o.layout)))
      return failure();

  SmallVector<std::pair<StringRef, RankedTensorType>> others;
  for (const Operand &o : ArrayRef(operands).drop_front())
    others.push_back({o.name, o.type});
  if (failed(sameFloatType(q, others, /*allowF64=*/true)))
    return failure();

  if (failed(isStatic("query", q, 1, "Hq")) ||
      failed(isStatic("query", q, 3, "D")) ||
      failed(isStatic("key", k, 1, "Hkv")) ||
      failed(isStatic("key", k, 3, "D")) ||
      failed(isStatic("value", v, 1, "Hkv")) ||
      failed(isStatic("value", v, 3, "Dv")) ||
      (g && failed(isStatic("gate", g, 1, "Hg"))) ||
      (g && failed(isStatic("gate", g, 3, "Dg"))) ||
      failed(isStatic(resultName, r, 1, "Hq")) ||
      failed(isStatic(resultName, r, 3, "Dv")))
    return failure();

  // Sizes. A head needs at least one query, key/value and feature lane; no
  // operand may hold more elements than a byte offset can address after the
  // lowerings multiply sizes together (static sizes near 2^63 would wrap).
  if (failed(isPositive("query", q, 1, "Hq")) ||
      failed(isPositive("key", k, 1, "Hkv")) ||
      failed(isPositive("query", q, 3, "D")) ||
      failed(isPositive("value", v, 3, "Dv")))
    return failure();
  for (const Operand &o : operands)
    if (failed(boundedOperand(o.name, o.type)))
      return failure();
  // The scores B x Hq x Sq x Skv, which the reference lowering materializes.
  if (failed(fitsAddressSpace("the score matrix (B x Hq x Sq x Skv)",
                              {q.getDimSize(0), q.getDimSize(1),
                               q.getDimSize(2), k.getDimSize(2)})))
    return failure();

  int64_t batch = q.getDimSize(0), hq = q.getDimSize(1), sq = q.getDimSize(2),
          d = q.getDimSize(3), hkv = k.getDimSize(1), skv = k.getDimSize(2),
          dv = v.getDimSize(3);
  // The batch size may be static on any operand: compare all against the
  // first one that knows it.
  for (const Operand &o : operands)
    if (!o.type.isDynamicDim(0)) {
      batch = o.type.getDimSize(0);
      break;
    }
  for (const Operand &o : operands)
    if (failed(matches(o.name, o.type, 0, "B", batch)))
      return failure();

  if (failed(dividesHeads("key", 1, hkv, hq)) ||
      failed(matches("key", k, 3, "D", d)) ||
      failed(matches("value", v, 1, "Hkv", hkv)) ||
      failed(matches("value", v, 2, "Skv", skv)))
    return failure();

  if (failed(matches(resultName, r, 1, "Hq", hq)) ||
      failed(matches(resultName, r, 2, "Sq", sq)) ||
      failed(matches(resultName, r, 3, "Dv", dv)))
    return failure();
  if (!g)
    return success();

  return success(
      succeeded(gateLayout(g.getDimSize(1), g.getDimSize(3), hq, dv, 1, 3)) &&
      succeeded(matches("gate", g, 2, "Sq", sq)));
}

LogicalResult
mlir::gated_attention::verifyNoUnknownAttributes(Operation *op,
                                                 ArrayRef<StringRef> known) {
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    StringRef name = attr.getName().strref();
    if (name.contains('.') || name.starts_with("__"))
      continue;
    StringRef closest;
    unsigned closestDistance = std::numeric_limits<unsigned>::max();
    for (StringRef candidate : known) {
      unsigned distance = name.edit_distance(candidate);
      if (distance < closestDistance) {
        closest = candidate;
        closestDistance = distance;
      }
    }
    InFlightDiagnostic diag = op->emitOpError()
                              << "has unknown attribute '" << name << "'";
    if (closestDistance <= std::max<size_t>(2, name.size() / 2))
      diag << "; did you mean '" << closest << "'?";
    diag << " (known: " << llvm::interleaved(known, ", ")
         << "; discardable attributes need a dialect prefix)";
    return diag;
  }
  return success();
}

/// The width of a row of query, key, value, gate and result: their row
/// strides in row-major buffers.
static SmallVector<int64_t, 5> rowWidths(AttentionOp op) {
  return {op.getHeadDim(), op.getHeadDim(), op.getValueHeadDim(),
          op.hasGate() ? op.getGateType().getDimSize(3) : 1,
          op.getValueHeadDim()};
}

SmallVector<int64_t, 5> AttentionOp::getRowStrides() {
  if (auto strides =
          (*this)->getAttrOfType<DenseI64ArrayAttr>(getRowStridesAttrName()))
    return SmallVector<int64_t, 5>(strides.asArrayRef());
  return rowWidths(*this);
}

/// A row stride is at least its row's width (rows never overlap) and at
/// most 2^48 elements, like every size (products of it stay in 64 bits).
static LogicalResult verifyRowStrides(AttentionOp op) {
  Attribute attr = op->getAttr(AttentionOp::getRowStridesAttrName());
  if (!attr)
    return success();
  auto strides = dyn_cast<DenseI64ArrayAttr>(attr);
  if (!strides || strides.size() != 5)
    return op.emitOpError()
           << "'" << AttentionOp::getRowStridesAttrName()
           << "' must be array<i64: query, key, value, gate, result> (the "
              "elements between rows of each buffer), got "
           << attr;
  const char *names[] = {"query", "key", "value", "gate", "result"};
  for (auto [name, stride, width] :
       llvm::zip_equal(names, strides.asArrayRef(), rowWidths(op))) {
    if (!ShapedType::isDynamic(width) && stride < width)
      return op.emitOpError()
             << "'" << AttentionOp::getRowStridesAttrName() << "': the " << name
             << " row stride " << stride << " is smaller than its row ("
             << width << " elements)";
    if (static_cast<uint64_t>(stride) > kMaxElements)
      return op.emitOpError()
             << "'" << AttentionOp::getRowStridesAttrName() << "': the " << name
             << " row stride " << stride << " is more than 2^48 elements";
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  return success(
      succeeded(DenseShapeContract(*this, getQueryType(), getKeyType(),
                                   getValueType(), getGateType(), "result",
                                   getResultType())
                    .verify()) &&
      (!hasLse() || succeeded(ShapeDiagnostics(*this).logSumExp(
                        "lse", cast<RankedTensorType>(getLse().getType()),
                        getQueryType()))) &&
      succeeded(verifyNoUnknownAttributes(*this, getAttributeNames())) &&
      succeeded(verifyRowStrides(*this)) &&
      succeeded(verifyScale(*this, getScale())));
}
