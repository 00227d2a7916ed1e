// RUN: gated-attention-opt %s --convert-gated-attention-to-parallel-rows --split-input-file \
// RUN:   | FileCheck %s

// Each row stores m + log(l) (+inf where l = 0) from its key loop's state
// into a B x Hq x Sq buffer of its own.
// CHECK-LABEL: func.func @lse
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<1x4x?x8xf32>
// CHECK: %[[LSE:.+]] = memref.alloc(%{{.+}}) : memref<1x4x?xf32>
// CHECK: scf.parallel
// CHECK: %[[ML:.+]]:2 = scf.for
// CHECK: math.log %[[ML]]#1 : f32
// CHECK: memref.store %{{.+}}, %[[LSE]][%{{.+}}, %{{.+}}, %{{.+}}] : memref<1x4x?xf32>
// CHECK: %[[O:.+]] = bufferization.to_tensor %[[OUT]]
// CHECK: %[[L:.+]] = bufferization.to_tensor %[[LSE]]
// CHECK: return %[[O]], %[[L]]
func.func @lse(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?xf32>) {
  %o, %l = gated_attention.attention %q, %k, %v {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?xf32>)
  return %o, %l : tensor<1x4x?x8xf32>, tensor<1x4x?xf32>
}

// -----

// Not asked: one buffer, no log.
// CHECK-LABEL: func.func @no_lse
// CHECK: memref.alloc
// CHECK-NOT: memref.alloc(
// CHECK-NOT: math.log
// CHECK: return
func.func @no_lse(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32> {
  %o = gated_attention.attention %q, %k, %v {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}
