//===- VerifyModuleAttributes.cpp - what translation reads from modules ---===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Transforms/Passes.h"

#include "Translatable.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_VERIFYMODULEATTRIBUTESPASS
#include "GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;

namespace {
/// On the pipelines' input: lowerings query the data layout (the index
/// width, type sizes) long before verify-translation runs, and would crash
/// on a layout entry of the wrong kind.
struct VerifyModuleAttributesPass
    : gated_attention::impl::VerifyModuleAttributesPassBase<
          VerifyModuleAttributesPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](Operation *op) {
      return failed(gated_attention::verifyModuleAttributes(op))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
