// RUN: gated-attention-opt %s | gated-attention-opt | FileCheck %s
// RUN: gated-attention-opt %s --mlir-print-op-generic | gated-attention-opt | FileCheck %s

// Qwen3-Next's full-attention layer on a hybrid cache of 528-token pages:
// packed queries, GQA 16:2, D 256, an elementwise per-head gate.
// CHECK-LABEL: func.func @qwen3_next
// CHECK:         gated_attention.paged_attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal}
// CHECK-SAME:      (tensor<?x16x256xbf16>, tensor<?x528x2x256xbf16>, tensor<?x528x2x256xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16>
func.func @qwen3_next(%q: tensor<?x16x256xbf16>, %kc: tensor<?x528x2x256xbf16>, %vc: tensor<?x528x2x256xbf16>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>, %g: tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16> {
  %0 = gated_attention.paged_attention %q, %kc, %vc, %table, %lens, %cu, %g {causal} : (tensor<?x16x256xbf16>, tensor<?x528x2x256xbf16>, tensor<?x528x2x256xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16>
  return %0 : tensor<?x16x256xbf16>
}

// Static sizes, no gate, the other attributes.
// CHECK-LABEL: func.func @static_ungated
// CHECK:         gated_attention.paged_attention
// CHECK-SAME:      combine = #gated_attention.combine<add>, gate = #gated_attention.gate<silu>, scale = 1.250000e-01 : f32
func.func @static_ungated(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x32xf32>, %table: tensor<2x4xi32>, %lens: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x32xf32> {
  %0 = gated_attention.paged_attention %q, %kc, %vc, %table, %lens, %cu {combine = #gated_attention.combine<add>, gate = #gated_attention.gate<silu>, scale = 0.125 : f32} : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x32xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x32xf32>
  return %0 : tensor<5x4x32xf32>
}
