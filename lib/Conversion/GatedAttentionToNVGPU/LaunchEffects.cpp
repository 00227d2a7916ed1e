//===- LaunchEffects.cpp - memory effects of kernel launches --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/LaunchEffects.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace {
struct LaunchFuncEffects
    : MemoryEffectOpInterface::ExternalModel<LaunchFuncEffects,
                                             gpu::LaunchFuncOp> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<MemoryEffects::EffectInstance> &effects) const {
    for (OpOperand &operand :
         cast<gpu::LaunchFuncOp>(op).getKernelOperandsMutable()) {
      if (!isa<BaseMemRefType>(operand.get().getType()))
        continue;
      effects.emplace_back(MemoryEffects::Read::get(), &operand);
      effects.emplace_back(MemoryEffects::Write::get(), &operand);
    }
    // Through pointers (after gpu-to-llvm, all of them) and globals, a
    // kernel reads and writes memory nothing here names: without these, a
    // launch would count as dead.
    effects.emplace_back(MemoryEffects::Read::get());
    effects.emplace_back(MemoryEffects::Write::get());
  }
};

/// A TMA map encodes its buffer's address and shape; making one touches no
/// memory. The buffer must outlive the launches that read it through the
/// map: ownership-based deallocation frees a buffer at the end of the block
/// that owns it, after the launch that the map is made for.
struct TmaCreateDescriptorEffects
    : MemoryEffectOpInterface::ExternalModel<TmaCreateDescriptorEffects,
                                             nvgpu::TmaCreateDescriptorOp> {
  void getEffects(Operation *,
                  SmallVectorImpl<MemoryEffects::EffectInstance> &) const {}
};
} // namespace

void mlir::gated_attention::registerLaunchEffects(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, gpu::GPUDialect *) {
    gpu::LaunchFuncOp::attachInterface<LaunchFuncEffects>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, nvgpu::NVGPUDialect *) {
    nvgpu::TmaCreateDescriptorOp::attachInterface<TmaCreateDescriptorEffects>(
        *ctx);
  });
}

LogicalResult
mlir::gated_attention::verifyLaunchesAreSynchronous(Operation *root) {
  WalkResult result =
      root->walk([](gpu::LaunchFuncOp launch) {
        if (!launch.getAsyncToken() && launch.getAsyncDependencies().empty())
          return WalkResult::advance();
        if (llvm::none_of(launch.getKernelOperands().getTypes(),
                          llvm::IsaPred<BaseMemRefType>))
          return WalkResult::advance();
        launch.emitOpError()
            << "is asynchronous and is passed a memref: the PTX pipeline frees "
               "host buffers after the launches that use them, which must "
               "complete before the next op (drop the async token and "
               "dependencies)";
        return WalkResult::interrupt();
      });
  return failure(result.wasInterrupted());
}
