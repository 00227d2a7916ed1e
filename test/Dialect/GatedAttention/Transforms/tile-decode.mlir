// RUN: gated-attention-opt %s --gated-attention-tile --canonicalize --cse | FileCheck %s

// Sq dynamic: one tiling of 16 rows per head (a second one for Sq = 1
// under an scf.if would give each branch its own result buffer and cost the
// torch op's destination passing: test/Pipelines/destination-passing.mlir).
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-NOT:     scf.if
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (8, %{{.+}}) step (4, 16)
// CHECK:           tensor.empty() : tensor<64x32xf32>
// CHECK-NOT:     scf.forall (
func.func @dynamic_rows(%q: tensor<1x8x?x32xf32>, %k: tensor<1x2x?x32xf32>, %v: tensor<1x2x?x32xf32>) -> tensor<1x8x?x32xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x8x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) -> tensor<1x8x?x32xf32>
  return %0 : tensor<1x8x?x32xf32>
}

// Sq static below the tile's rows per head (a decode step compiled for
// Sq = 1): the tile shrinks to the op's rows, 4 heads x 1 row, not 16 padded.
// CHECK-LABEL: func.func @static_rows
// CHECK-NOT:     scf.if
// CHECK:         scf.forall (%{{.+}}) = (0) to (8) step (4)
// CHECK:           tensor.empty() : tensor<4x32xf32>
// CHECK-NOT:     scf.forall (
func.func @static_rows(%q: tensor<1x8x1x32xf32>, %k: tensor<1x2x?x32xf32>, %v: tensor<1x2x?x32xf32>) -> tensor<1x8x1x32xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x8x1x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) -> tensor<1x8x1x32xf32>
  return %0 : tensor<1x8x1x32xf32>
}
