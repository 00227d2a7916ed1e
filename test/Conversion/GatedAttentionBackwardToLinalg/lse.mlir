// RUN: gated-attention-opt %s -split-input-file --convert-gated-attention-backward-to-linalg -canonicalize | FileCheck %s

// With the forward's log-sum-exp the weights are P = exp(s - L), L split
// by GQA group like the query: no row max or row sum is recomputed.
// CHECK-LABEL: func.func @lse
// CHECK-SAME: %[[L:[^:]+]]: tensor<1x4x?xf32>
// CHECK-NOT: arith.maximumf
// CHECK: %[[L5:.+]] = tensor.expand_shape %[[L]] {{\[}}[0], [1, 2], [3]] {{.+}} : tensor<1x4x?xf32> into tensor<1x2x2x?xf32>
// CHECK-NOT: arith.maximumf
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[L5]] : tensor<1x2x2x?x?xf32>, tensor<1x2x2x?xf32>)
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %[[LI:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:   %[[D:.+]] = arith.subf %[[S]], %[[LI]] : f32
// CHECK-NEXT:   math.exp %[[D]] : f32
// CHECK-NOT: arith.maximumf
// CHECK: return
func.func @lse(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>, %o: tensor<1x4x?x8xf32>, %do: tensor<1x4x?x8xf32>, %l: tensor<1x4x?xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) {
  %dq, %dk, %dv = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%l) {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>)
  return %dq, %dk, %dv : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>
}

// -----

// Without it the row max is recomputed.
// CHECK-LABEL: func.func @no_lse
// CHECK: arith.maximumf
func.func @no_lse(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>, %o: tensor<1x4x?x8xf32>, %do: tensor<1x4x?x8xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) {
  %dq, %dk, %dv = gated_attention.attention_backward %q, %k, %v, %o, %do {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>)
  return %dq, %dk, %dv : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>
}
