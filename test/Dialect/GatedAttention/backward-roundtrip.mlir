// RUN: gated-attention-opt %s | gated-attention-opt | FileCheck %s
// RUN: gated-attention-opt %s --mlir-print-op-generic | gated-attention-opt | FileCheck %s

// Defaults (sigmoid, mul, no scale) are elided; the gate comes last and its
// gradient is the fourth result.
// CHECK-LABEL: func.func @gated
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}, %[[DG:.+]] = gated_attention.attention_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal} :
// CHECK-SAME: (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>)
// CHECK-SAME: -> (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
// CHECK: return %[[DG]]
func.func @gated(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>,
                 %v: tensor<1x2x?x256xbf16>, %o: tensor<1x16x?x256xbf16>,
                 %do: tensor<1x16x?x256xbf16>, %g: tensor<1x16x?x256xbf16>)
    -> tensor<1x16x?x256xbf16> {
  %dq, %dk, %dv, %dg = gated_attention.attention_backward %q, %k, %v, %o, %do, %g {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>,
         tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>)
      -> (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>,
          tensor<1x16x?x256xbf16>)
  return %dg : tensor<1x16x?x256xbf16>
}

// Without a gate: three results.
// CHECK-LABEL: func.func @no_gate
// CHECK: gated_attention.attention_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.250000e-01 : f32} :
// CHECK-SAME: -> (tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>, tensor<2x8x?x32xf32>)
// CHECK-NOT: gate_grad
func.func @no_gate(%q: tensor<2x8x?x64xf32>, %k: tensor<2x8x?x64xf32>,
                   %v: tensor<2x8x?x32xf32>, %o: tensor<2x8x?x32xf32>,
                   %do: tensor<2x8x?x32xf32>) -> tensor<2x8x?x64xf32> {
  %dq, %dk, %dv = gated_attention.attention_backward %q, %k, %v, %o, %do {scale = 0.125 : f32}
      : (tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>, tensor<2x8x?x32xf32>,
         tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>)
      -> (tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>, tensor<2x8x?x32xf32>)
  return %dq : tensor<2x8x?x64xf32>
}

// Every attribute, a shared headwise gate. The generic form says which
// optional operands (gate, lse) are present in operandSegmentSizes.
// CHECK-LABEL: func.func @all_attributes
// CHECK: gated_attention.attention_backward
// CHECK-SAME: {causal, combine = #gated_attention.combine<add>, gate = #gated_attention.gate<silu>, scale = 1.250000e-01 : f32}
// CHECK-SAME: tensor<2x1x128x1xf16>) -> (
func.func @all_attributes(%q: tensor<2x8x128x64xf16>, %k: tensor<2x4x96x64xf16>,
                          %v: tensor<2x4x96x32xf16>, %o: tensor<2x8x128x32xf16>,
                          %do: tensor<2x8x128x32xf16>, %g: tensor<2x1x128x1xf16>)
    -> tensor<2x1x128x1xf16> {
  %0:4 = "gated_attention.attention_backward"(%q, %k, %v, %o, %do, %g) {
      gate = #gated_attention.gate<silu>, combine = #gated_attention.combine<add>,
      causal, scale = 0.125 : f32,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0>}
      : (tensor<2x8x128x64xf16>, tensor<2x4x96x64xf16>, tensor<2x4x96x32xf16>,
         tensor<2x8x128x32xf16>, tensor<2x8x128x32xf16>, tensor<2x1x128x1xf16>)
      -> (tensor<2x8x128x64xf16>, tensor<2x4x96x64xf16>, tensor<2x4x96x32xf16>,
          tensor<2x1x128x1xf16>)
  return %0#3 : tensor<2x1x128x1xf16>
}

// The forward's log-sum-exp, after the gate: `lse(%lse)`, an f32 B x Hq x Sq
// tensor; the results do not change.
// CHECK-LABEL: func.func @with_lse
// CHECK: gated_attention.attention_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} lse(%{{.+}}) {causal} :
// CHECK-SAME: tensor<1x16x?x256xbf16>, tensor<1x16x?xf32>) -> (
func.func @with_lse(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>,
                    %v: tensor<1x2x?x256xbf16>, %o: tensor<1x16x?x256xbf16>,
                    %do: tensor<1x16x?x256xbf16>, %g: tensor<1x16x?x256xbf16>,
                    %lse: tensor<1x16x?xf32>) -> tensor<1x16x?x256xbf16> {
  %dq, %dk, %dv, %dg = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>,
         tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>,
         tensor<1x16x?xf32>)
      -> (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>,
          tensor<1x16x?x256xbf16>)
  return %dg : tensor<1x16x?x256xbf16>
}

// The log-sum-exp without a gate.
// CHECK-LABEL: func.func @lse_no_gate
// CHECK: gated_attention.attention_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} lse(%{{.+}}) :
// CHECK-SAME: tensor<2x8x?x32xf32>, tensor<2x8x?xf32>) -> (tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>, tensor<2x8x?x32xf32>)
func.func @lse_no_gate(%q: tensor<2x8x?x64xf32>, %k: tensor<2x8x?x64xf32>,
                       %v: tensor<2x8x?x32xf32>, %o: tensor<2x8x?x32xf32>,
                       %do: tensor<2x8x?x32xf32>, %lse: tensor<2x8x?xf32>)
    -> tensor<2x8x?x64xf32> {
  %dq, %dk, %dv = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>, tensor<2x8x?x32xf32>,
         tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>, tensor<2x8x?xf32>)
      -> (tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>, tensor<2x8x?x32xf32>)
  return %dq : tensor<2x8x?x64xf32>
}
