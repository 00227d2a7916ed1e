// RUN: gated-attention-opt %s | gated-attention-opt | FileCheck %s

// Dialect-prefixed (discardable) attributes annotate the op and survive.

// CHECK-LABEL: func.func @annotated
// CHECK: gated_attention.attention
// CHECK-SAME: causal
// CHECK-SAME: my_framework.layer = 3 : i64
func.func @annotated(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %r = gated_attention.attention %q, %k, %v {causal, my_framework.layer = 3} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %r : tensor<1x2x8x16xf32>
}
