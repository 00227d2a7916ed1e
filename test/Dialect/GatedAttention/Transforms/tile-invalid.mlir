// Bad block sizes are reported, not crashed on.
// RUN: not gated-attention-opt %s --gated-attention-tile=key-block=-1 2>&1 | FileCheck %s
// RUN: not gated-attention-opt %s --gated-attention-tile=query-block=-4 2>&1 | FileCheck %s
// CHECK: error: query-block and key-block must be positive, or 0 (auto)
func.func @f(%q: tensor<1x2x8x8xf32>, %k: tensor<1x2x8x8xf32>,
             %v: tensor<1x2x8x8xf32>, %g: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
