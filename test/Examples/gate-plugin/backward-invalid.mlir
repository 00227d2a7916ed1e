// RUN: gated-attention-opt --load-dialect-plugin=%gate_variants_plugin %s -split-input-file -verify-diagnostics

// The example's gates implement only GateFunctionAttrInterface: they are
// inference-only, and the backward op rejects them when it is built, not at
// a lowering.
func.func @tanh_backward(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) {
  // expected-error @+1 {{gate #gate_variants.tanh has no derivative: its attribute does not implement GateDerivativeAttrInterface (an inference-only gate)}}
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g {gate = #gate_variants.tanh} : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>)
  return
}

// -----

// Without a gate operand the gate attribute is ignored, as in the forward.
func.func @tanh_no_gate(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>) {
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do {gate = #gate_variants.tanh} : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
  return
}
