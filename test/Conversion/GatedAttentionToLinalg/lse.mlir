// RUN: gated-attention-opt %s --convert-gated-attention-to-linalg --split-input-file \
// RUN:   | FileCheck %s --implicit-check-not=gated_attention.attention

// The log-sum-exp is m + log(l) per row (+inf where l = 0), from the same
// row max and sum as the output, heads merged like the output's.
// CHECK-LABEL: func.func @lse
// CHECK: %[[OUT:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x2x?x8xf32> into tensor<1x4x?x8xf32>
// CHECK: linalg.generic
// CHECK: ^bb0(%[[M:.+]]: f32, %[[L:.+]]: f32, %{{.+}}: f32):
// CHECK:   %[[EMPTY:.+]] = arith.cmpf oeq, %[[L]]
// CHECK:   %[[LOG:.+]] = math.log %[[L]] : f32
// CHECK:   %[[SUM:.+]] = arith.addf %{{.+}}, %[[LOG]] : f32
// CHECK:   arith.select %[[EMPTY]], %{{.+}}, %[[SUM]] : f32
// CHECK: %[[LSE:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3]] : tensor<1x2x2x?xf32> into tensor<1x4x?xf32>
// CHECK: return %[[OUT]], %[[LSE]]
func.func @lse(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?xf32>) {
  %o, %l = gated_attention.attention %q, %k, %v {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?xf32>)
  return %o, %l : tensor<1x4x?x8xf32>, tensor<1x4x?xf32>
}

// -----

// Not asked: no log anywhere.
// CHECK-LABEL: func.func @no_lse
// CHECK-NOT: math.log
// CHECK: return
func.func @no_lse(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32> {
  %o = gated_attention.attention %q, %k, %v {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}
