//===- PagedAttentionOp.cpp - gated_attention.paged_attention -------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "VerifierSupport.h"

using namespace mlir;
using namespace mlir::gated_attention;

float PagedAttentionOp::getScaleValue() {
  return scaleOrDefault(getScale(), getHeadDim());
}

namespace {
/// The paged op's shape contract (see its description).
class PagedShapeContract : public ShapeDiagnostics {
public:
  explicit PagedShapeContract(PagedAttentionOp op)
      : ShapeDiagnostics(op), op(op) {}

  LogicalResult verify();

private:
  LogicalResult verifyTables();
  LogicalResult verifyGate(int64_t hq, int64_t dv, int64_t tokens);

  PagedAttentionOp op;
};
} // namespace

LogicalResult PagedShapeContract::verifyTables() {
  RankedTensorType table = op.getBlockTable().getType(),
                   lens = op.getSeqLens().getType(),
                   cu = op.getCuSeqlensQ().getType();
  if (failed(hasRank("block_table", table, 2, "B x MB")) ||
      failed(hasRank("seq_lens", lens, 1, "B")) ||
      failed(hasRank("cu_seqlens_q", cu, 1, "B + 1")))
    return failure();
  for (auto [name, type] :
       {std::pair{"block_table", table}, std::pair{"seq_lens", lens},
        std::pair{"cu_seqlens_q", cu}})
    if (!type.getElementType().isSignlessInteger(32))
      return op.emitOpError() << name << " element type must be i32, got "
                              << type.getElementType();
  int64_t batch = table.getDimSize(0);
  if (ShapedType::isDynamic(batch))
    batch = lens.getDimSize(0);
  if (failed(matches("seq_lens", lens, 0, "B", batch)))
    return failure();
  if (!ShapedType::isDynamic(batch) && !cu.isDynamicDim(0) &&
      cu.getDimSize(0) != batch + 1)
    return fail("cu_seqlens_q", 0, "B + 1")
           << "must be " << batch + 1 << ", got " << cu.getDimSize(0);
  if (cu.getDimSize(0) == 0)
    return fail("cu_seqlens_q", 0, "B + 1") << "must be positive, got 0";
  return success();
}

LogicalResult PagedShapeContract::verifyGate(int64_t hq, int64_t dv,
                                             int64_t tokens) {
  RankedTensorType g = op.getGateType();
  if (!g)
    return success();
  if (failed(hasRank("gate", g, 3, "T x Hg x Dg")) ||
      failed(isStatic("gate", g, 1, "Hg")) ||
      failed(isStatic("gate", g, 2, "Dg")) ||
      failed(matches("gate", g, 0, "T", tokens)))
    return failure();
  return gateLayout(g.getDimSize(1), g.getDimSize(2), hq, dv, 1, 2);
}

LogicalResult PagedShapeContract::verify() {
  RankedTensorType q = op.getQueryType(), k = op.getKeyCacheType(),
                   v = op.getValueCacheType(), r = op.getResultType();
  if (failed(hasRank("query", q, 3, "T x Hq x D")) ||
      failed(hasRank("key_cache", k, 4, "NB x P x Hkv x D")) ||
      failed(hasRank("value_cache", v, 4, "NB x P x Hkv x Dv")) ||
      failed(hasRank("result", r, 3, "T x Hq x Dv")))
    return failure();

  SmallVector<std::pair<StringRef, RankedTensorType>> same = {
      {"key_cache", k}, {"value_cache", v}, {"result", r}};
  if (op.hasGate())
    same.push_back({"gate", op.getGateType()});
  if (failed(sameFloatType(q, same)))
    return failure();

  if (failed(isStatic("query", q, 1, "Hq")) ||
      failed(isStatic("query", q, 2, "D")) ||
      failed(isStatic("key_cache", k, 1, "P")) ||
      failed(isStatic("key_cache", k, 2, "Hkv")) ||
      failed(isStatic("key_cache", k, 3, "D")) ||
      failed(isStatic("value_cache", v, 1, "P")) ||
      failed(isStatic("value_cache", v, 2, "Hkv")) ||
      failed(isStatic("value_cache", v, 3, "Dv")) ||
      failed(isStatic("result", r, 1, "Hq")) ||
      failed(isStatic("result", r, 2, "Dv")))
    return failure();
  if (failed(isPositive("query", q, 1, "Hq")) ||
      failed(isPositive("query", q, 2, "D")) ||
      failed(isPositive("key_cache", k, 2, "Hkv")) ||
      failed(isPositive("value_cache", v, 3, "Dv")))
    return failure();
  int64_t hq = q.getDimSize(1), d = q.getDimSize(2), page = k.getDimSize(1),
          hkv = k.getDimSize(2), dv = v.getDimSize(3);
  if (page <= 0 || page % 16 != 0)
    return fail("key_cache", 1, "P")
           << "(tokens per page) must be a positive multiple of 16, got "
           << page;
  for (auto [name, type] :
       {std::pair{"query", q}, std::pair{"key_cache", k},
        std::pair{"value_cache", v}, std::pair{"result", r}})
    if (failed(boundedOperand(name, type)))
      return failure();
  if (failed(dividesHeads("key_cache", 2, hkv, hq)) ||
      failed(matches("key_cache", k, 3, "D", d)) ||
      failed(matches("value_cache", v, 0, "NB", k.getDimSize(0))) ||
      failed(matches("value_cache", v, 1, "P", page)) ||
      failed(matches("value_cache", v, 2, "Hkv", hkv)) ||
      failed(matches("result", r, 0, "T", q.getDimSize(0))) ||
      failed(matches("result", r, 1, "Hq", hq)) ||
      failed(matches("result", r, 2, "Dv", dv)))
    return failure();
  int64_t tokens = q.getDimSize(0);
  if (ShapedType::isDynamic(tokens))
    tokens = r.getDimSize(0);
  return success(succeeded(verifyTables()) &&
                 succeeded(verifyGate(hq, dv, tokens)));
}

LogicalResult PagedAttentionOp::verify() {
  return success(
      succeeded(PagedShapeContract(*this).verify()) &&
      succeeded(verifyNoUnknownAttributes(*this, getAttributeNames())) &&
      succeeded(verifyScale(*this, getScale())));
}
