// RUN: gated-attention-opt %s --decompose-aggregated-ops | FileCheck %s

// A softmax becomes max, exp and sum reductions and a divide: plain linalg
// that the pipelines lower like the rest of a graph.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: linalg.softmax
// CHECK: linalg.generic
// CHECK: arith.maxnumf
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.divf
// CHECK-NOT: linalg.softmax
func.func @softmax(%s: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %e = tensor.empty() : tensor<1x4x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x4x8x8xf32>) outs(%e : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %p : tensor<1x4x8x8xf32>
}
