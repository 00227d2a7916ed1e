// RUN: gated-attention-opt %s --load-dialect-plugin=%gate_variants_plugin \
// RUN:   --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not gated-attention-opt %s --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOPLUGIN
// RUN: not gated-attention-opt %s --load-dialect-plugin=%t.missing.so 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING
// The stock tool loads the plugin: its attributes parse, verify and print
// as gates of the op. Without the plugin they are unknown; a plugin that is
// not there is an error, not a crash.

// NOPLUGIN: load.mlir:[[@LINE+9]]:{{[0-9]+}}: error: #"gate_variants"<"tanh"> : 'none' attribute created with unregistered dialect
// MISSING: gated-attention-opt: error: cannot load the dialect plugin '{{.*}}.missing.so'

// CHECK-LABEL: func.func @variants
// CHECK:         gated_attention.attention %{{.+}} {gate = #gate_variants.tanh}
// CHECK:         gated_attention.attention %{{.+}} {causal, combine = #gated_attention.combine<add>, gate = #gate_variants.sigmoid<temperature = 5.000000e-01 : f32>}
func.func @variants(%q: tensor<1x2x8x16xf32>, %k: tensor<1x1x8x16xf32>,
                    %v: tensor<1x1x8x16xf32>, %g: tensor<1x2x8x1xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %a = gated_attention.attention %q, %k, %v, %g {gate = #gate_variants.tanh}
      : (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
         tensor<1x2x8x1xf32>) -> tensor<1x2x8x16xf32>
  %b = gated_attention.attention %q, %k, %v, %g
      {causal, combine = #gated_attention.combine<add>,
       gate = #gate_variants.sigmoid<temperature = 0.5 : f32>}
      : (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
         tensor<1x2x8x1xf32>) -> tensor<1x2x8x16xf32>
  return %a, %b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// -----

func.func @zero_temperature(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x16xf32>)
    -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{temperature must be a positive f32, got 0.000000e+00 : f32}}
  %a = gated_attention.attention %q, %q, %q, %g {gate = #gate_variants.sigmoid<temperature = 0.0 : f32>}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>,
         tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %a : tensor<1x2x8x16xf32>
}

// -----

func.func @f64_temperature(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x16xf32>)
    -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{temperature must be a positive f32, got 2.000000e+00 : f64}}
  %a = gated_attention.attention %q, %q, %q, %g {gate = #gate_variants.sigmoid<temperature = 2.0 : f64>}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>,
         tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %a : tensor<1x2x8x16xf32>
}

// -----

// The op's gate must implement the gate-function interface.
func.func @not_a_gate(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x16xf32>)
    -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{gate function attribute}}
  %a = gated_attention.attention %q, %q, %q, %g {gate = 1.0 : f32}
      : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>,
         tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %a : tensor<1x2x8x16xf32>
}
