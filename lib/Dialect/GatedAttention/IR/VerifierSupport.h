//===- VerifierSupport.h - checks the ops' verifiers share ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The checks the verifiers of the attention ops share: shape checks that
// report the first violation at the op, naming the operand, the dimension
// (index and symbol) and the expected vs actual value; and the rejection of
// attributes the op does not define.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_VERIFIER_SUPPORT_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_VERIFIER_SUPPORT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/APFloat.h"

#include <optional>

#include <string>

namespace mlir::gated_attention {

/// Bounds on static sizes: 2^48 elements is beyond any memory and leaves
/// room for the byte and stride products of the lowerings in 64 bits; a head
/// dim is a register/cache tile dimension of every lowering.
inline constexpr uint64_t kMaxElements = uint64_t(1) << 48;
inline constexpr int64_t kMaxHeadDim = 4096;

class ShapeDiagnostics {
public:
  explicit ShapeDiagnostics(Operation *op) : op(op) {}

  static std::string printSize(int64_t size) {
    return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
  }

  InFlightDiagnostic fail(StringRef operand, unsigned dim, StringRef meaning) {
    return op->emitOpError()
           << operand << " dim " << dim << " (" << meaning << ") ";
  }
  /// `type` has rank `rank`, else the error names the layout.
  LogicalResult hasRank(StringRef operand, RankedTensorType type, int64_t rank,
                        StringRef layout) {
    if (type.getRank() == rank)
      return success();
    return op->emitOpError() << operand << " must be a " << rank
                             << "-D tensor (" << layout << "), got " << type;
  }
  /// `dim` of `operand` must equal `expected` where both are known.
  LogicalResult matches(StringRef operand, RankedTensorType type, unsigned dim,
                        StringRef meaning, int64_t expected) {
    int64_t actual = type.getDimSize(dim);
    if (ShapedType::isDynamic(actual) || ShapedType::isDynamic(expected) ||
        actual == expected)
      return success();
    return fail(operand, dim, meaning)
           << "must be " << expected << ", got " << actual;
  }
  LogicalResult isStatic(StringRef operand, RankedTensorType type, unsigned dim,
                         StringRef meaning) {
    if (!type.isDynamicDim(dim))
      return success();
    return fail(operand, dim, meaning) << "must be static, got ?";
  }
  LogicalResult isPositive(StringRef operand, RankedTensorType type,
                           unsigned dim, StringRef meaning) {
    if (type.getDimSize(dim) > 0)
      return success();
    return fail(operand, dim, meaning)
           << "must be positive, got " << type.getDimSize(dim);
  }
  /// The static sizes of `shape` multiply to at most kMaxElements.
  LogicalResult fitsAddressSpace(StringRef what, ArrayRef<int64_t> shape);
  /// An operand fits the address space and its last (head) dim is at most
  /// kMaxHeadDim.
  LogicalResult boundedOperand(StringRef name, RankedTensorType type);
  /// Dim `dim` (Hkv) of `operand` divides the query head count `hq`.
  LogicalResult dividesHeads(StringRef operand, unsigned dim, int64_t hkv,
                             int64_t hq);
  /// The query's element type is f32, f16 or bf16 (or f64, with
  /// `allowF64`: the dense ops, whose reference lowerings accumulate in it)
  /// and `others` have it.
  LogicalResult
  sameFloatType(RankedTensorType query,
                ArrayRef<std::pair<StringRef, RankedTensorType>> others,
                bool allowF64 = false);
  /// A gate of `hg` heads of width `dg` (dims `headDim`, `widthDim` of the
  /// gate operand) fits Hq = `hq`, Dv = `dv`: per head or shared,
  /// elementwise or headwise.
  LogicalResult gateLayout(int64_t hg, int64_t dg, int64_t hq, int64_t dv,
                           unsigned headDim, unsigned widthDim);
  /// A log-sum-exp tensor named `name` (the forward's result, the
  /// backward's operand) is a `B x Hq x Sq` tensor of the query's
  /// accumulator type (f32; f64 for f64) matching `query`.
  LogicalResult logSumExp(StringRef name, RankedTensorType lse,
                          RankedTensorType query);

protected:
  Operation *op;
};

/// The dense ops' shape contract (gated_attention.attention's, which the
/// backward shares): query, key, value, the optional gate (null type: none)
/// and a `B x Hq x Sq x Dv` tensor named `resultName` (the forward's result,
/// the backward's `output`).
class DenseShapeContract : public ShapeDiagnostics {
public:
  DenseShapeContract(Operation *op, RankedTensorType q, RankedTensorType k,
                     RankedTensorType v, RankedTensorType g,
                     StringRef resultName, RankedTensorType r)
      : ShapeDiagnostics(op), q(q), k(k), v(v), g(g), r(r),
        resultName(resultName) {}

  LogicalResult verify();

private:
  RankedTensorType q, k, v, g, r;
  StringRef resultName;
};

/// The softmax scale of an op: `scale`, or 1/sqrt(headDim) when absent.
float scaleOrDefault(std::optional<APFloat> scale, int64_t headDim);

/// A `scale` attribute, when present, is finite and positive.
LogicalResult verifyScale(Operation *op, std::optional<APFloat> scale);

/// Attributes outside the op's definition (`known`) are typos (`scael`) or
/// another framework's spellings (`is_causal`) that would silently compile
/// as the default: an error with the closest known name. Dialect-prefixed
/// names (`foo.bar`) and passes' internal markers (`__name__`) stay allowed.
LogicalResult verifyNoUnknownAttributes(Operation *op,
                                        ArrayRef<StringRef> known);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_IR_VERIFIER_SUPPORT_H
