// RUN: gated-attention-opt %s --gated-attention-tile --canonicalize --cse | FileCheck %s

// Sq dynamic: a decode step (Sq = 1) gets tiles of one row per head of its
// own, since a tile is padded to its static rows (16 per head here: 64 rows
// over a GQA group of 4), which would compute 16 times the work of one row.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK:         %[[SQ:.+]] = tensor.dim %{{.+}}, %c2 : tensor<1x8x?x32xf32>
// CHECK:         %[[DECODE:.+]] = arith.cmpi eq, %[[SQ]], %c1 : index
// CHECK:         scf.if %[[DECODE]] -> (tensor<1x8x?x32xf32>)
// CHECK:           scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (8, %[[SQ]]) step (4, 1)
// The decode tile: 4 heads x 1 row.
// CHECK:             tensor.empty() : tensor<4x32xf32>
// CHECK:         } else {
// CHECK:           scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (8, %[[SQ]]) step (4, 16)
// CHECK:             tensor.empty() : tensor<64x32xf32>
func.func @dynamic_rows(%q: tensor<1x8x?x32xf32>, %k: tensor<1x2x?x32xf32>, %v: tensor<1x2x?x32xf32>) -> tensor<1x8x?x32xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x8x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) -> tensor<1x8x?x32xf32>
  return %0 : tensor<1x8x?x32xf32>
}

// Sq static: one tiling, with no more rows per head than the op has.
// CHECK-LABEL: func.func @static_rows
// CHECK-NOT:     scf.if
// CHECK:         scf.forall (%{{.+}}) = (0) to (8) step (4)
// CHECK:           tensor.empty() : tensor<4x32xf32>
// CHECK-NOT:     scf.forall (
func.func @static_rows(%q: tensor<1x8x1x32xf32>, %k: tensor<1x2x?x32xf32>, %v: tensor<1x2x?x32xf32>) -> tensor<1x8x1x32xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x8x1x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) -> tensor<1x8x1x32xf32>
  return %0 : tensor<1x8x1x32xf32>
}
