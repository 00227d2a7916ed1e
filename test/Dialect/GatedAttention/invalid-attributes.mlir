// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics

// Attributes the op does not define would silently compile as defaults.

func.func @torch_spelling(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{has unknown attribute 'is_causal'; did you mean 'causal'?}}
  %r = gated_attention.attention %q, %k, %v {is_causal} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %r : tensor<1x2x8x16xf32>
}

// -----

func.func @typo(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{has unknown attribute 'scael'; did you mean 'scale'? (known: }}
  %r = gated_attention.attention %q, %k, %v {scael = 0.5 : f32} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %r : tensor<1x2x8x16xf32>
}

// -----

// The generic form too.
func.func @generic(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{has unknown attribute 'gates'; did you mean 'gate'?}}
  %r = "gated_attention.attention"(%q, %k, %v) {gates = #gated_attention.gate<silu>} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %r : tensor<1x2x8x16xf32>
}

// -----

// Nothing close: no suggestion, the list of known attributes.
func.func @unrelated(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error-re @+1 {{has unknown attribute 'dropout_probability' (known: {{.*}}causal{{.*}}; discardable attributes need a dialect prefix)}}
  %r = gated_attention.attention %q, %k, %v {dropout_probability = 0.1 : f32} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %r : tensor<1x2x8x16xf32>
}
