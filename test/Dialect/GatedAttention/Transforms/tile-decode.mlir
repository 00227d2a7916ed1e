// RUN: gated-attention-opt %s --gated-attention-tile="query-block=64 key-block=64" --canonicalize --cse | FileCheck %s

// Sq dynamic: one tiling of 16 rows per head, and inside each tile three
// versions, scf.ifs inside the tile so that the scf.forall still writes
// the op's destination (a second tiling around it would give each branch
// its own result buffer and cost the torch op's destination passing:
// test/Pipelines/destination-passing.mlir).
// - A full tile (16 rows, every tile but a sequence's last) has static
//   rows: its query rows are read and its output rows written in place, no
//   padded copy of either.
// - Otherwise a decode step (one row) computes 4 heads x 1 row instead of
//   4 x 16 padded ones, and other tiles pad their rows to 16. Each version
//   yields every head's output rows (1 or 16 of them).
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-NOT:     scf.if
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (1, 8, %{{.+}}) step (1, 4, 16)
// CHECK:           %[[ROWS:.+]] = affine.min
// CHECK:           %[[Q:.+]] = tensor.extract_slice %arg0
// CHECK:           %[[OUT:.+]] = tensor.empty(%[[ROWS]]) : tensor<1x4x?x32xf32>
// CHECK:           %[[FULL:.+]] = arith.cmpi eq, %[[ROWS]], %c16
// CHECK:           %[[RES:.+]] = scf.if %[[FULL]] -> (tensor<1x4x?x32xf32>)
// CHECK-NOT:         %[[ROWS]], 32]
// CHECK:             tensor.extract_slice %[[Q]][0, 0, 0, 0] [1, 1, 16, 32] [1, 1, 1, 1] : tensor<1x4x?x32xf32> to tensor<16x32xf32>
// CHECK-NOT:         %[[ROWS]], 32]
// CHECK:             %[[O0:.+]] = tensor.insert_slice %{{.+}} into %[[OUT]][0, 0, 0, 0] [1, 1, 16, 32] [1, 1, 1, 1] : tensor<16x32xf32> into tensor<1x4x?x32xf32>
// CHECK:             %[[O1:.+]] = tensor.insert_slice %{{.+}} into %[[O0]][0, 1, 0, 0] [1, 1, 16, 32]
// CHECK:             %[[O2:.+]] = tensor.insert_slice %{{.+}} into %[[O1]][0, 2, 0, 0] [1, 1, 16, 32]
// CHECK:             %[[O3:.+]] = tensor.insert_slice %{{.+}} into %[[O2]][0, 3, 0, 0] [1, 1, 16, 32]
// CHECK-NEXT:        scf.yield %[[O3]]
// CHECK-NEXT:      } else {
// CHECK:             %[[DECODE:.+]] = arith.cmpi ule, %[[ROWS]], %c1
// CHECK:             %[[TILE:.+]]:4 = scf.if %[[DECODE]] -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>)
// CHECK:               tensor.empty() : tensor<4x32xf32>
// CHECK-COUNT-4:       tensor.cast %{{.+}} : tensor<1x32xf32> to tensor<?x32xf32>
// CHECK:             } else {
// CHECK:               tensor.empty() : tensor<64x32xf32>
// CHECK-COUNT-4:       tensor.cast %{{.+}} : tensor<16x32xf32> to tensor<?x32xf32>
// CHECK:             tensor.extract_slice %[[TILE]]#0[0, 0] [%[[ROWS]], 32]
// CHECK:             tensor.extract_slice %[[TILE]]#1[0, 0] [%[[ROWS]], 32]
// CHECK:             tensor.extract_slice %[[TILE]]#2[0, 0] [%[[ROWS]], 32]
// CHECK:             tensor.extract_slice %[[TILE]]#3[0, 0] [%[[ROWS]], 32]
// CHECK:           tensor.parallel_insert_slice %[[RES]]
// CHECK-NOT:     scf.forall (
func.func @dynamic_rows(%q: tensor<1x8x?x32xf32>, %k: tensor<1x2x?x32xf32>, %v: tensor<1x2x?x32xf32>) -> tensor<1x8x?x32xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x8x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) -> tensor<1x8x?x32xf32>
  return %0 : tensor<1x8x?x32xf32>
}

// Sq static below the tile's rows per head (a decode step compiled for
// Sq = 1): the tile shrinks to the op's rows, 4 heads x 1 row, not 16 padded.
// CHECK-LABEL: func.func @static_rows
// CHECK-NOT:     scf.if
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (1, 8, 1) step (1, 4, 1)
// CHECK:           tensor.empty() : tensor<4x32xf32>
// CHECK-NOT:     scf.forall (
func.func @static_rows(%q: tensor<1x8x1x32xf32>, %k: tensor<1x2x?x32xf32>, %v: tensor<1x2x?x32xf32>) -> tensor<1x8x1x32xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x8x1x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) -> tensor<1x8x1x32xf32>
  return %0 : tensor<1x8x1x32xf32>
}
