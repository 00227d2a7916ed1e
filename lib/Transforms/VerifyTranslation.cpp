//===- VerifyTranslation.cpp - the output translates to LLVM IR -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Transforms/Passes.h"
#include "Translatable.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_VERIFYTRANSLATIONPASS
#include "GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;

/// The op LLVM's verifier `message` is about: the first symbol of `module`
/// that the message names (it prints the value it rejects, `ptr @llvm.used`),
/// or else the module.
static Operation *culprit(ModuleOp module, StringRef message) {
  auto isNameChar = [](char c) {
    return llvm::isAlnum(c) || StringRef("-$._").contains(c);
  };
  for (size_t at = message.find('@'); at != StringRef::npos;
       at = message.find('@', at + 1)) {
    StringRef name = message.drop_front(at + 1).take_while(isNameChar);
    if (Operation *symbol = SymbolTable::lookupSymbolIn(module, name))
      return symbol;
  }
  return module;
}

namespace {
struct VerifyTranslationPass
    : gated_attention::impl::VerifyTranslationPassBase<VerifyTranslationPass> {
  using Base::Base;

  /// What the pipelines' output holds: LLVM and OpenMP ops, and the GPU
  /// binaries and launches of the PTX pipeline's host code.
  void getDependentDialects(DialectRegistry &registry) const override {
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
    registerOpenMPDialectTranslation(registry);
    gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // What translation would crash on, not fail: checked first.
    WalkResult walk = module.walk([](Operation *op) {
      return failed(gated_attention::verifyTranslatable(op))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    // Translation legalizes the module it is given (distinct successors):
    // a clone keeps this a check.
    OwningOpRef<ModuleOp> copy = module.clone();
    bool reported = false;
    ScopedDiagnosticHandler noteErrors(&getContext(), [&](Diagnostic &diag) {
      reported |= diag.getSeverity() == DiagnosticSeverity::Error;
      return failure(); // Passed on to the handlers before this one.
    });
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(*copy, llvmContext, "verify-translation",
                                /*disableVerification=*/true);
    if (!llvmModule) {
      if (!reported)
        module.emitError("translation to LLVM IR failed");
      return signalPassFailure();
    }
    // LLVM's verifier prints what it rejects but emits no diagnostic.
    std::string message;
    llvm::raw_string_ostream os(message);
    if (!llvm::verifyModule(*llvmModule, &os))
      return markAllAnalysesPreserved();
    culprit(module, message)->emitError()
        << "the output translates to LLVM IR that LLVM's verifier rejects: "
        << StringRef(message).trim();
    signalPassFailure();
  }
};
} // namespace
