// RUN: gated-attention-opt %s | gated-attention-opt | FileCheck %s
// RUN: gated-attention-opt %s --mlir-print-op-generic | gated-attention-opt | FileCheck %s

// Defaults (sigmoid, mul, no scale) are elided in the pretty form.
// CHECK-LABEL: func.func @defaults
// CHECK: %[[R:.+]] = gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK-SAME: (tensor<2x8x64x32xf32>, tensor<2x8x64x32xf32>, tensor<2x8x64x32xf32>, tensor<2x8x64x32xf32>) -> tensor<2x8x64x32xf32>
// CHECK: return %[[R]]
func.func @defaults(%q: tensor<2x8x64x32xf32>, %k: tensor<2x8x64x32xf32>,
                    %v: tensor<2x8x64x32xf32>, %g: tensor<2x8x64x32xf32>) -> tensor<2x8x64x32xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<2x8x64x32xf32>, tensor<2x8x64x32xf32>, tensor<2x8x64x32xf32>, tensor<2x8x64x32xf32>) -> tensor<2x8x64x32xf32>
  return %0 : tensor<2x8x64x32xf32>
}

// Without a gate operand the op is plain attention (graphs gated at G2-G5).
// CHECK-LABEL: func.func @no_gate
// CHECK: gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}} {causal} :
// CHECK-SAME: (tensor<2x8x64x32xf32>, tensor<2x2x64x32xf32>, tensor<2x2x64x32xf32>) -> tensor<2x8x64x32xf32>
func.func @no_gate(%q: tensor<2x8x64x32xf32>, %k: tensor<2x2x64x32xf32>,
                   %v: tensor<2x2x64x32xf32>) -> tensor<2x8x64x32xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal}
      : (tensor<2x8x64x32xf32>, tensor<2x2x64x32xf32>, tensor<2x2x64x32xf32>) -> tensor<2x8x64x32xf32>
  return %0 : tensor<2x8x64x32xf32>
}

// Every attribute set, written in the generic form of the issue.
// CHECK-LABEL: func.func @generic_all_attributes
// CHECK: gated_attention.attention
// CHECK-SAME: {causal, combine = #gated_attention.combine<add>, gate = #gated_attention.gate<silu>, scale = 1.250000e-01 : f32}
func.func @generic_all_attributes(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x80x32xf32>,
                                  %v: tensor<1x2x80x16xf32>, %g: tensor<1x8x64x16xf32>) -> tensor<1x8x64x16xf32> {
  %0 = "gated_attention.attention"(%q, %k, %v, %g) {gate = #gated_attention.gate<silu>, combine = #gated_attention.combine<add>, causal, scale = 0.125 : f32}
      : (tensor<1x8x64x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x16xf32>, tensor<1x8x64x16xf32>) -> tensor<1x8x64x16xf32>
  return %0 : tensor<1x8x64x16xf32>
}

// CHECK-LABEL: func.func @ns_sigmoid_mul_explicit
// An explicit default combine is elided; the non-default gate is kept.
// CHECK: gated_attention.attention %{{.+}} {gate = #gated_attention.gate<ns_sigmoid>} :
func.func @ns_sigmoid_mul_explicit(%q: tensor<1x4x8x16xf16>, %k: tensor<1x4x8x16xf16>,
                                   %v: tensor<1x4x8x16xf16>, %g: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  %0 = gated_attention.attention %q, %k, %v, %g {combine = #gated_attention.combine<mul>, gate = #gated_attention.gate<ns_sigmoid>}
      : (tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %0 : tensor<1x4x8x16xf16>
}

// Qwen3-Next: GQA 16/2, head dim 256, causal, dynamic batch and sequences.
// CHECK-LABEL: func.func @qwen3_next_dynamic
// CHECK: gated_attention.attention %{{.+}} {causal} :
// CHECK-SAME: (tensor<?x16x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x16x?x256xbf16>) -> tensor<?x16x?x256xbf16>
func.func @qwen3_next_dynamic(%q: tensor<?x16x?x256xbf16>, %k: tensor<?x2x?x256xbf16>,
                              %v: tensor<?x2x?x256xbf16>, %g: tensor<?x16x?x256xbf16>) -> tensor<?x16x?x256xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x16x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x16x?x256xbf16>) -> tensor<?x16x?x256xbf16>
  return %0 : tensor<?x16x?x256xbf16>
}

// Headwise gate shared across heads (Hg = 1, Dg = 1), MQA, Dv != D, Sq != Skv.
// CHECK-LABEL: func.func @shared_headwise_mqa
// CHECK: gated_attention.attention
// CHECK-SAME: (tensor<1x8x128x64xf32>, tensor<1x1x96x64xf32>, tensor<1x1x96x32xf32>, tensor<1x1x128x1xf32>) -> tensor<1x8x128x32xf32>
func.func @shared_headwise_mqa(%q: tensor<1x8x128x64xf32>, %k: tensor<1x1x96x64xf32>,
                               %v: tensor<1x1x96x32xf32>, %g: tensor<1x1x128x1xf32>) -> tensor<1x8x128x32xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x8x128x64xf32>, tensor<1x1x96x64xf32>, tensor<1x1x96x32xf32>, tensor<1x1x128x1xf32>) -> tensor<1x8x128x32xf32>
  return %0 : tensor<1x8x128x32xf32>
}

// CHECK-LABEL: func.func @attributes
// CHECK-SAME: #gated_attention.gate<sigmoid>, #gated_attention.gate<silu>, #gated_attention.gate<ns_sigmoid>, #gated_attention.combine<mul>, #gated_attention.combine<add>
func.func @attributes() attributes {all = [#gated_attention.gate<sigmoid>, #gated_attention.gate<silu>, #gated_attention.gate<ns_sigmoid>, #gated_attention.combine<mul>, #gated_attention.combine<add>]} {
  return
}

// The optional log-sum-exp: a second result type, f32 B x Hq x Sq.
// CHECK-LABEL: func.func @with_lse
// CHECK: %[[OUT:.+]], %[[LSE:.+]] = gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal} :
// CHECK-SAME: -> (tensor<1x16x?x256xbf16>, tensor<1x16x?xf32>)
// CHECK: return %[[OUT]], %[[LSE]]
func.func @with_lse(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>,
                    %v: tensor<1x2x?x256xbf16>, %g: tensor<1x16x?x256xbf16>)
    -> (tensor<1x16x?x256xbf16>, tensor<1x16x?xf32>) {
  %out, %lse = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
         tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
      -> (tensor<1x16x?x256xbf16>, tensor<1x16x?xf32>)
  return %out, %lse : tensor<1x16x?x256xbf16>, tensor<1x16x?xf32>
}
