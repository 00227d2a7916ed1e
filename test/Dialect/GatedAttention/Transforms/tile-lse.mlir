// RUN: gated-attention-opt %s --gated-attention-tile --canonicalize --cse --split-input-file \
// RUN:   | FileCheck %s

// The log-sum-exp tiles with the rows: the scf.forall carries it as a
// second shared output, each tile computes shift(m) + log(l - c) -
// log(sigma) from its key loops' state and inserts its rows per head.
// CHECK-LABEL: func.func @lse
// CHECK: scf.forall {{.+}} shared_outs(%[[O:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}) -> (tensor<1x4x?x8xf32>, tensor<1x4x?xf32>)
// CHECK: math.log
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[O]]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[L]][0, %{{.+}}, %{{.+}}] [1, 2, %{{.+}}] [1, 1, 1] : tensor<1x2x?xf32> into tensor<1x4x?xf32>
func.func @lse(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?xf32>) {
  %o, %l = gated_attention.attention %q, %k, %v {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?xf32>)
  return %o, %l : tensor<1x4x?x8xf32>, tensor<1x4x?xf32>
}

// -----

// Not asked: one shared output, no log.
// CHECK-LABEL: func.func @no_lse
// CHECK: scf.forall {{.+}} shared_outs(%{{[^,]+}}) -> (tensor<1x4x?x8xf32>)
// CHECK-NOT: math.log
// CHECK: return
func.func @no_lse(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32> {
  %o = gated_attention.attention %q, %k, %v {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}
