//===- VerifyLowered.cpp - what a pipeline leaves behind ------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Transforms/Passes.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/InterleavedRange.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_VERIFYLOWEREDPASS
#include "GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;

/// The libdevice functions that `ptx` declares but does not define.
static SmallVector<StringRef> unresolvedLibdevice(StringRef ptx) {
  SmallVector<StringRef> names;
  StringRef marker = ".extern .func";
  for (size_t at = ptx.find(marker); at != StringRef::npos;
       at = ptx.find(marker, at + marker.size())) {
    StringRef rest = ptx.drop_front(at + marker.size());
    size_t begin = rest.find("__nv_");
    size_t lineEnd = rest.find('\n');
    if (begin == StringRef::npos || begin > lineEnd)
      continue;
    StringRef name = rest.drop_front(begin);
    names.push_back(name.take_until(
        [](char c) { return !(llvm::isAlnum(c) || c == '_'); }));
  }
  return names;
}

namespace {
struct VerifyLoweredPass
    : gated_attention::impl::VerifyLoweredPassBase<VerifyLoweredPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::string> names(dialects.begin(), dialects.end());
    if (names.empty())
      names = {"builtin", "llvm"};
    llvm::sort(names);
    llvm::StringSet<> allowed;
    for (const std::string &name : names)
      allowed.insert(name);

    WalkResult result = getOperation()->walk([&](Operation *op) {
      StringRef dialect = op->getName().getDialectNamespace();
      if (!allowed.contains(dialect)) {
        op->emitError() << "'" << op->getName()
                        << "' was not lowered by the pipeline (it produces "
                           "only the "
                        << llvm::interleaved(names, ", ") << " dialects)";
        return WalkResult::interrupt();
      }
      auto binary = dyn_cast<gpu::BinaryOp>(op);
      if (!binary)
        return WalkResult::advance();
      for (Attribute attr : binary.getObjects()) {
        auto object = dyn_cast<gpu::ObjectAttr>(attr);
        if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
          continue;
        SmallVector<StringRef> missing =
            unresolvedLibdevice(object.getObject().getValue());
        if (missing.empty())
          continue;
        op->emitError() << "kernel PTX calls libdevice ("
                        << llvm::interleaved(missing, ", ")
                        << ") but libdevice was not linked: set CUDA_HOME to "
                           "a CUDA toolkit that has "
                           "nvvm/libdevice/libdevice.10.bc";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
