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

// -----

// A tile mapping's flag is the keyword `growing`, nothing else.
func.func @tile_flag(%m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.reduce
  // expected-error @+1 {{expected 'growing'}}
  } {mapping = [#gated_attention.tile<0, grows>]}
  return
}
