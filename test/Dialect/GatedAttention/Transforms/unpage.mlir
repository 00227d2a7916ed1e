// RUN: gated-attention-opt %s --gated-attention-unpage --canonicalize | FileCheck %s

// One dense op per sequence: its queries sliced from the packed tensor and
// transposed to [1, Hq, q_b, D]; its keys and values copied through the
// block table (page table[b, j / P], slot j mod P) by an scf.forall over its
// seq_lens[b] tokens, each token's H x W row contiguous in its page; its
// rows of the result written back token-major into a zero-filled result.
// CHECK-LABEL: func.func @paged
// CHECK-SAME:    (%[[Q:.+]]: tensor<?x4x64xf32>, %[[KC:.+]]: tensor<?x16x2x64xf32>, %[[VC:.+]]: tensor<?x16x2x64xf32>, %[[T:.+]]: tensor<?x?xi32>, %[[L:.+]]: tensor<?xi32>, %[[CU:.+]]: tensor<?xi32>, %[[G:.+]]: tensor<?x4x1xf32>)
// CHECK:         %[[ZERO:.+]] = linalg.fill
// CHECK:         %[[B:.+]] = tensor.dim %[[L]], %c0
// CHECK:         scf.for %[[S:.+]] = %c0 to %[[B]] step %c1 iter_args(%[[ACC:.+]] = %[[ZERO]])
// CHECK:           %[[FIRST:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK:           %[[COUNT:.+]] = arith.subi
// CHECK:           %[[LEN:.+]] = arith.index_cast
// CHECK:           tensor.extract_slice %[[Q]][%[[FIRST]], 0, 0] [%[[COUNT]], 4, 64] [1, 1, 1]
// CHECK:           %[[KINIT:.+]] = tensor.empty(%[[LEN]]) : tensor<1x2x?x64xf32>
// CHECK:           %[[K:.+]] = scf.forall (%[[J:.+]]) in (%[[LEN]]) shared_outs(%[[KOUT:.+]] = %[[KINIT]])
// CHECK:             %[[PI:.+]] = arith.divui %[[J]], %c16
// CHECK:             %[[PAGE:.+]] = tensor.extract %[[T]][%[[S]], %[[PI]]]
// CHECK:             %[[PID:.+]] = arith.index_cast %[[PAGE]]
// CHECK:             %[[SLOT:.+]] = arith.remui %[[J]], %c16
// CHECK:             %[[ROW:.+]] = tensor.extract_slice %[[KC]][%[[PID]], %[[SLOT]], 0, 0] [1, 1, 2, 64] [1, 1, 1, 1] : tensor<?x16x2x64xf32> to tensor<2x64xf32>
// CHECK:             scf.forall.in_parallel
// CHECK:               tensor.parallel_insert_slice %[[ROW]] into %[[KOUT]][0, 0, %[[J]], 0] [1, 2, 1, 64]
// CHECK:           scf.forall (%{{.+}}) in (%[[LEN]])
// CHECK:             tensor.extract_slice %[[VC]]
// CHECK:           gated_attention.attention %{{.+}}, %[[K]], %{{.+}}, %{{.+}} {causal, gate = #gated_attention.gate<silu>, scale = 1.250000e-01 : f32}
// CHECK-SAME:        (tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x4x?x1xf32>) -> tensor<1x4x?x64xf32>
// CHECK:           tensor.insert_slice %{{.+}} into %[[ACC]][%[[FIRST]], 0, 0] [%[[COUNT]], 4, 64] [1, 1, 1]
// CHECK-NOT:     gated_attention.paged_attention
func.func @paged(%q: tensor<?x4x64xf32>, %kc: tensor<?x16x2x64xf32>, %vc: tensor<?x16x2x64xf32>, %table: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>, %g: tensor<?x4x1xf32>) -> tensor<?x4x64xf32> {
  %0 = gated_attention.paged_attention %q, %kc, %vc, %table, %lens, %cu, %g {causal, gate = #gated_attention.gate<silu>} : (tensor<?x4x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x4x1xf32>) -> tensor<?x4x64xf32>
  return %0 : tensor<?x4x64xf32>
}
