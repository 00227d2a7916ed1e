// RUN: gated-attention-opt %s --convert-gated-attention-to-parallel-rows \
// RUN:   -verify-diagnostics

// The SIMT row kernel computes in f32: an f64 op is an error, not a silent
// loss of precision (the CPU pipeline lowers f64).
func.func @f64(%q: tensor<1x2x?x16xf64>, %k: tensor<1x2x?x16xf64>, %v: tensor<1x2x?x16xf64>) -> tensor<1x2x?x16xf64> {
  // expected-error @+1 {{no GPU lowering of f64 attention: the GPU kernels compute in f32; f64 lowers on the CPU (--gated-attention-to-llvm, the reference lowering)}}
  %o = gated_attention.attention %q, %k, %v : (tensor<1x2x?x16xf64>, tensor<1x2x?x16xf64>, tensor<1x2x?x16xf64>) -> tensor<1x2x?x16xf64>
  return %o : tensor<1x2x?x16xf64>
}
