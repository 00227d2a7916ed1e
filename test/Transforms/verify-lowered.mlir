// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics \
// RUN:   --verify-lowered=dialects=builtin,llvm,gpu

// What a pipeline could not lower is an error naming the op.
func.func @left(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.return' was not lowered by the pipeline (it produces only the builtin, gpu, llvm dialects)}}
  return %x : tensor<4xf32>
}

// -----

// PTX that still declares a libdevice function does not assemble.
// expected-error @+1 {{kernel PTX calls libdevice (__nv_expf, __nv_exp2f) but libdevice was not linked: set CUDA_HOME}}
gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = ".version 8.0\n.target sm_90\n.extern .func  (.param .b32 func_retval0) __nv_expf\n(\n.param .b32 __nv_expf_param_0\n)\n;\n.extern .func  (.param .b32 func_retval0) __nv_exp2f(.param .b32 p);\n.visible .entry k() { ret; }\n">]

// -----

// Linked PTX passes.
gpu.binary @linked [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = ".version 8.0\n.target sm_90\n.visible .entry k() { ret; }\n">]
llvm.func @host() {
  llvm.return
}
