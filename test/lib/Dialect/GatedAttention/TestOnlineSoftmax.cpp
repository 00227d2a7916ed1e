//===- TestOnlineSoftmax.cpp - the decomposition patterns alone -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Applies populateGatedAttentionOnlineSoftmaxPatterns without tiling first,
// so that tests see the decomposition of whole ops: batch and head-group
// loops, unpadded dynamic rows, stacked GQA heads.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionDialect.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace {
struct TestOnlineSoftmaxPass
    : PassWrapper<TestOnlineSoftmaxPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestOnlineSoftmaxPass)

  TestOnlineSoftmaxPass() = default;
  TestOnlineSoftmaxPass(const TestOnlineSoftmaxPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final {
    return "test-gated-attention-online-softmax";
  }
  StringRef getDescription() const final {
    return "Apply the online-softmax decomposition patterns to untiled "
           "gated_attention ops";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry
        .insert<affine::AffineDialect, arith::ArithDialect,
                bufferization::BufferizationDialect, linalg::LinalgDialect,
                math::MathDialect, scf::SCFDialect, tensor::TensorDialect>();
  }

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    gated_attention::OnlineSoftmaxOptions options;
    options.keyBlock = keyBlock;
    gated_attention::populateGatedAttentionOnlineSoftmaxPatterns(patterns,
                                                                 options);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }

  Option<int64_t> keyBlock{*this, "key-block", llvm::cl::desc("Keys per block"),
                           llvm::cl::init(16)};
};
} // namespace

namespace mlir::gated_attention::test {
void registerTestOnlineSoftmaxPass() {
  PassRegistration<TestOnlineSoftmaxPass>();
}
} // namespace mlir::gated_attention::test
