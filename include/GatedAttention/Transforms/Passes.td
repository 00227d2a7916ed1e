//===- Passes.td - dialect-independent passes ---------------*- tablegen -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_GENERIC_TRANSFORMS_PASSES_TD
#define GATED_ATTENTION_GENERIC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DedupGPUKernelsPass : Pass<"dedup-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "Keep one copy of structurally identical outlined GPU kernels";
  let description = [{
    A model graph repeats its layers, and outlining makes one `gpu.module`
    per launch: a 48-layer stack has hundreds of kernels of which a few dozen
    differ. This pass keeps the first of every set of kernels that are equal
    up to their names (same function type and attributes, same target
    attributes on the module, equivalent bodies ignoring locations),
    redirects every `gpu.launch_func` to it and erases the copies, so that
    each distinct kernel is compiled (by `gpu-module-to-binary`) once.
    Modules with more than one symbol are left alone.

    ```mlir
    gpu.launch_func @layer0_kernel::@layer0_kernel ...
    gpu.launch_func @layer1_kernel::@layer1_kernel ...   // same body
    // becomes
    gpu.launch_func @layer0_kernel::@layer0_kernel ...
    gpu.launch_func @layer0_kernel::@layer0_kernel ...
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // GATED_ATTENTION_GENERIC_TRANSFORMS_PASSES_TD
