//===- LaunchEffects.h - memory effects of kernel launches ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// gpu.launch_func and nvgpu.tma.create.descriptor declare no memory
// effects, which buffer deallocation needs to free a buffer after the last
// launch that uses it. The PTX pipeline's host code frees its buffers;
// these give it what it needs.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_LAUNCH_EFFECTS_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_LAUNCH_EFFECTS_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class DialectRegistry;
class Operation;

namespace gated_attention {

/// Attaches MemoryEffectOpInterface to gpu.launch_func (the kernel reads and
/// writes every memref it is passed, and memory in general; a launch
/// without an async token completes before the next op runs) and to
/// nvgpu.tma.create.descriptor (no memory effect).
void registerLaunchEffects(DialectRegistry &registry);

/// Fails, at the launch, on an asynchronous gpu.launch_func (async token or
/// dependencies) that is passed a memref: the kernel may still run after
/// the launch op, when deallocation would already have freed the buffer.
LogicalResult verifyLaunchesAreSynchronous(Operation *root);

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_LAUNCH_EFFECTS_H
