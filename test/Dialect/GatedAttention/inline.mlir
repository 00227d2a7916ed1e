// RUN: gated-attention-opt %s --inline | FileCheck %s --implicit-check-not=@layer

// A layer holding the op inlines into its caller (model graphs are exported
// as calls to per-layer functions); the private layer is then erased: no
// @layer anywhere, neither the call nor the function (--implicit-check-not;
// the function comes first in the input).
// CHECK-LABEL: func.func @model
// CHECK:         gated_attention.attention
// CHECK:         return
func.func private @layer(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}
func.func @model(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %0 = call @layer(%q, %k, %v) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}
