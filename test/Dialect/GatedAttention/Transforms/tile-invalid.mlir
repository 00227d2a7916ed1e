// Bad block sizes are reported, not crashed on.
// RUN: not gated-attention-opt %s --gated-attention-tile=key-block=-1 2>&1 | FileCheck %s
// RUN: not gated-attention-opt %s --gated-attention-tile=query-block=-4 2>&1 | FileCheck %s
// RUN: not gated-attention-opt %s --gated-attention-tile=diagonal-key-block=-32 2>&1 | FileCheck %s
// A diagonal block must divide the key block (its loops start where the
// whole key blocks end).
// RUN: not gated-attention-opt %s --gated-attention-tile="key-block=64 diagonal-key-block=48" 2>&1 | FileCheck %s --check-prefix=DIVIDE
// DIVIDE: tile-invalid.mlir:[[#@LINE+4]]:8: error: diagonal-key-block (48) must divide key-block (64)
// CHECK: error: query-block, key-block and diagonal-key-block must be positive, or 0 (auto)
func.func @f(%q: tensor<1x2x8x8xf32>, %k: tensor<1x2x8x8xf32>,
             %v: tensor<1x2x8x8xf32>, %g: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
