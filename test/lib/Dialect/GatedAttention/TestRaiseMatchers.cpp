//===- TestRaiseMatchers.cpp - what each raise matcher finds --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Runs the pure matchers of Utils/RaiseMatchers.h on the result of every
// linalg op and reports, as one remark per op, what they find there, so that
// each spelling (and each near miss) is tested on its own with
// -verify-diagnostics instead of only through a whole raised chain.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionDialect.h"
#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::gated_attention;

/// What the matchers find at `v`, each as a short phrase.
static SmallVector<std::string> describe(Value v) {
  SmallVector<std::string> found;
  std::string s;
  llvm::raw_string_ostream os(s);
  auto flush = [&] { found.push_back(std::move(s)), s.clear(); };
  if (std::optional<AttentionChain> chain = matchAttentionChain(v)) {
    os << "attention scale " << chain->scale
       << (chain->causal ? " causal" : "");
    flush();
  }
  if (std::optional<BatchedMatmul> mm = matchBatchedMatmul(v)) {
    os << "batched matmul" << (mm->rhsTransposed ? " rhs transposed" : "");
    flush();
  }
  if (matchSoftmax(v))
    found.push_back("softmax");
  if (matchCausalMask(v))
    found.push_back("causal mask");
  if (Value scores; matchEmptyRowGuard(v, scores))
    found.push_back("empty-row guard");
  if (double scale; matchScale(v, scale)) {
    os << "scale " << scale;
    flush();
  }
  if (Value through = throughRepeat(v); through != v)
    found.push_back("gqa repeat");
  if (auto generic = v.getDefiningOp<linalg::GenericOp>()) {
    auto builtin = [](Value act, Value x) -> Attribute {
      std::optional<GateKind> kind = matchBuiltinActivation(act, x);
      return kind ? GateKindAttr::get(act.getContext(), *kind) : Attribute();
    };
    if (std::optional<GateCombine> gate = matchGateCombine(generic, builtin)) {
      os << "gate " << gate->function << " "
         << stringifyCombineKind(gate->combine) << " map " << gate->map;
      flush();
    }
  }
  return found;
}

namespace {
struct TestRaiseMatchersPass
    : PassWrapper<TestRaiseMatchersPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestRaiseMatchersPass)

  StringRef getArgument() const final {
    return "test-gated-attention-raise-matchers";
  }
  StringRef getDescription() const final {
    return "Report, as remarks, what the raise matchers find at each linalg "
           "op";
  }
  // The gate matchers build gate attributes.
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<GatedAttentionDialect>();
  }

  void runOnOperation() override {
    getOperation()->walk([](linalg::LinalgOp op) {
      if (op->getNumResults() != 1)
        return;
      SmallVector<std::string> found = describe(op->getResult(0));
      if (!found.empty())
        op->emitRemark() << llvm::join(found, "; ");
    });
    // linalg.softmax is not a LinalgOp, and a GQA repeat ends in a reshape.
    getOperation()->walk([](Operation *op) {
      if (!isa<linalg::SoftmaxOp, tensor::CollapseShapeOp>(op))
        return;
      SmallVector<std::string> found = describe(op->getResult(0));
      if (!found.empty())
        op->emitRemark() << llvm::join(found, "; ");
    });
  }
};
} // namespace

namespace mlir::gated_attention::test {
void registerTestRaiseMatchersPass() {
  PassRegistration<TestRaiseMatchersPass>();
}
} // namespace mlir::gated_attention::test
