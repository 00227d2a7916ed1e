// RUN: gated-attention-opt %s --split-input-file \
// RUN:   --test-gated-attention-online-softmax=key-block=16 --canonicalize --cse | FileCheck %s

// The decomposition patterns alone, on whole (untiled) ops.

// Dynamic rows without a static bound: batches and heads become loops, one
// head per iteration, and the tiles keep their dynamic row count (no
// padding of the query).
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<2x4x?x16xf32>
// CHECK: scf.for %[[B:.+]] = %c0 to %c2 step %c1
// CHECK: scf.for %[[H:.+]] = %c0 to %c4 step %c1
// CHECK: %[[QT:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], 0, 0] [1, 1, %{{.+}}, 16]
// CHECK-SAME: to tensor<?x16xf32>
// CHECK: scf.for {{.+}} -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>)
// CHECK: scf.for {{.+}} -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>)
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[H]], 0, 0] [1, 1, %{{.+}}, 8]
func.func @dynamic_rows(%q: tensor<2x4x?x16xf32>, %k: tensor<2x2x?x16xf32>,
                        %v: tensor<2x2x?x8xf32>, %g: tensor<2x1x?x1xf32>) -> tensor<2x4x?x8xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<2x4x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?x8xf32>, tensor<2x1x?x1xf32>) -> tensor<2x4x?x8xf32>
  return %0 : tensor<2x4x?x8xf32>
}

// -----

// Static rows: the two query heads of each GQA group are stacked into one
// 80-row tile, the head loop steps by the group, and the tail block
// (keys 32..40) is padded to 16 keys.
// CHECK-LABEL: func.func @stacked_group
// CHECK: scf.for %[[H:.+]] = %c0 to %c4 step %c2
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [40, 16] [1, 1] : tensor<40x16xf32> into tensor<80x16xf32>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[40, 0] [40, 16] [1, 1] : tensor<40x16xf32> into tensor<80x16xf32>
// CHECK: scf.for {{.+}} -> (tensor<80xf32>, tensor<80xf32>, tensor<80x8xf32>)
// CHECK: tensor.pad {{.+}} high[%c8, 0]
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [40, 8] [1, 1] : tensor<80x8xf32> to tensor<40x8xf32>
// CHECK: tensor.extract_slice %{{.+}}[40, 0] [40, 8] [1, 1] : tensor<80x8xf32> to tensor<40x8xf32>
func.func @stacked_group(%q: tensor<1x4x40x16xf32>, %k: tensor<1x2x40x16xf32>,
                         %v: tensor<1x2x40x8xf32>, %g: tensor<1x4x40x8xf32>) -> tensor<1x4x40x8xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x4x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x8xf32>, tensor<1x4x40x8xf32>) -> tensor<1x4x40x8xf32>
  return %0 : tensor<1x4x40x8xf32>
}
