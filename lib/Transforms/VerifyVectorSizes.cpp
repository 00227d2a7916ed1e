//===- VerifyVectorSizes.cpp - vectors a pipeline can unroll --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Transforms/Passes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_VERIFYVECTORSIZESPASS
#include "GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;

/// The most elements of a vector type the pipelines take. Vectors are
/// register values: the CPU pipeline unrolls transfers row by row (65,536
/// rows take seconds; 2^40 never end) and LLVM counts a vector's elements in
/// 32 bits (vector<2^40xf32> translates to <0 x float>).
static constexpr uint64_t kMaxVectorElements = uint64_t(1) << 16;

/// `type`'s elements, saturated at UINT64_MAX.
static uint64_t countElements(VectorType type) {
  uint64_t count = 1;
  for (int64_t size : type.getShape()) {
    bool overflow;
    count =
        llvm::SaturatingMultiply(count, static_cast<uint64_t>(size), &overflow);
    if (overflow)
      return std::numeric_limits<uint64_t>::max();
  }
  return count;
}

namespace {
struct VerifyVectorSizesPass
    : gated_attention::impl::VerifyVectorSizesPassBase<VerifyVectorSizesPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([&](Operation *op) {
      // Results, block arguments and the types attributes hold (a
      // declaration's signature, a constant's type) cover every value.
      VectorType tooLarge;
      auto check = [&](Type type) {
        type.walk([&](VectorType vector) {
          if (!tooLarge && countElements(vector) > kMaxVectorElements)
            tooLarge = vector;
        });
      };
      for (Type type : op->getResultTypes())
        check(type);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (Type type : block.getArgumentTypes())
            check(type);
      op->getAttrDictionary().walk([&](Type type) { check(type); });
      if (!tooLarge)
        return WalkResult::advance();
      InFlightDiagnostic diag = op->emitError()
                                << "'" << op->getName() << "' uses " << tooLarge
                                << ", ";
      uint64_t count = countElements(tooLarge);
      if (count == std::numeric_limits<uint64_t>::max())
        diag << "2^64 or more";
      else
        diag << count;
      diag << " elements; the pipelines take vectors of at most "
           << kMaxVectorElements
           << " (vectors are register values, unrolled as they are "
              "lowered): use a tensor or a memref";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
