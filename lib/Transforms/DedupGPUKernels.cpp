//===- DedupGPUKernels.cpp - one copy of identical GPU kernels ------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Transforms/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_DEDUPGPUKERNELSPASS
#include "GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;

/// The kernel of a module that holds nothing else, or null.
static gpu::GPUFuncOp soleKernel(gpu::GPUModuleOp module) {
  Block &body = module.getBodyRegion().front();
  if (!llvm::hasSingleElement(body))
    return {};
  auto func = dyn_cast<gpu::GPUFuncOp>(body.front());
  return func && func.isKernel() ? func : gpu::GPUFuncOp();
}

/// Attributes of `op` other than its name.
static DictionaryAttr unnamedAttrs(Operation *op) {
  NamedAttrList attrs(op->getAttrDictionary());
  attrs.erase(SymbolTable::getSymbolAttrName());
  return attrs.getDictionary(op->getContext());
}

/// A cheap fingerprint: equal kernels have equal fingerprints.
static llvm::hash_code fingerprint(gpu::GPUModuleOp module,
                                   gpu::GPUFuncOp func) {
  llvm::hash_code h =
      llvm::hash_combine(unnamedAttrs(module).getAsOpaquePointer(),
                         unnamedAttrs(func).getAsOpaquePointer());
  func.walk([&](Operation *op) {
    h = llvm::hash_combine(h, op->getName().getAsOpaquePointer(),
                           op->getNumOperands(), op->getNumResults());
  });
  return h;
}

static bool equivalent(gpu::GPUModuleOp lhsModule, gpu::GPUFuncOp lhs,
                       gpu::GPUModuleOp rhsModule, gpu::GPUFuncOp rhs) {
  return unnamedAttrs(lhsModule) == unnamedAttrs(rhsModule) &&
         unnamedAttrs(lhs) == unnamedAttrs(rhs) &&
         OperationEquivalence::isRegionEquivalentTo(
             &lhs.getBody(), &rhs.getBody(),
             OperationEquivalence::IgnoreLocations);
}

namespace {
struct DedupGPUKernelsPass
    : gated_attention::impl::DedupGPUKernelsPassBase<DedupGPUKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    DenseMap<llvm::hash_code, SmallVector<gpu::GPUModuleOp>> seen;
    DenseMap<Attribute, SymbolRefAttr> replacement;
    SmallVector<gpu::GPUModuleOp> copies;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      gpu::GPUFuncOp func = soleKernel(gpuModule);
      if (!func)
        continue;
      SmallVector<gpu::GPUModuleOp> &bucket =
          seen[fingerprint(gpuModule, func)];
      auto original = llvm::find_if(bucket, [&](gpu::GPUModuleOp other) {
        return equivalent(other, soleKernel(other), gpuModule, func);
      });
      if (original == bucket.end()) {
        bucket.push_back(gpuModule);
        continue;
      }
      auto ref = [](gpu::GPUModuleOp m) {
        return SymbolRefAttr::get(
            m.getNameAttr(),
            {FlatSymbolRefAttr::get(soleKernel(m).getNameAttr())});
      };
      replacement[ref(gpuModule)] = ref(*original);
      copies.push_back(gpuModule);
    }
    if (copies.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      if (SymbolRefAttr to = replacement.lookup(launch.getKernelAttr()))
        launch.setKernelAttr(to);
    });
    for (gpu::GPUModuleOp copy : copies)
      copy.erase();
  }
};
} // namespace
