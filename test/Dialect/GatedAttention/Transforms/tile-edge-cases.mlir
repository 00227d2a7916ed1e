// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile="query-block=64 key-block=64" | FileCheck %s

// A result type more static than the query: the tiled result is cast back.
// CHECK-LABEL: func.func @static_result
// CHECK: %[[FORALL:.+]] = scf.forall {{.*}} -> (tensor<?x2x?x8xf32>)
// CHECK: %[[CAST:.+]] = tensor.cast %[[FORALL]] : tensor<?x2x?x8xf32> to tensor<?x2x5x8xf32>
// CHECK: return %[[CAST]] : tensor<?x2x5x8xf32>
func.func @static_result(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>) -> tensor<?x2x5x8xf32> {
  %r = gated_attention.attention %q, %k, %v : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x5x8xf32>
  return %r : tensor<?x2x5x8xf32>
}

// -----

// Static Skv = 0: the tile's (empty) keys and values are empty tensors, not
// slices at an out-of-bounds offset 0. (CPU numerics: Integration/CPU/edge-shapes.test.)
// CHECK-LABEL: func.func @no_keys
// CHECK: scf.forall
// CHECK-NOT: tensor.extract_slice %arg1
// CHECK-NOT: tensor.extract_slice %arg2
// CHECK: tensor.empty() : tensor<1x1x0x16xf16>
// CHECK-NEXT: tensor.empty() : tensor<1x1x0x16xf16>
// CHECK-NOT: tensor.extract_slice %arg1
// CHECK-NOT: tensor.extract_slice %arg2
// CHECK: scf.forall.in_parallel
func.func @no_keys(%q: tensor<1x4x8x16xf16>, %k: tensor<1x2x0x16xf16>, %v: tensor<1x2x0x16xf16>, %g: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  %r = gated_attention.attention %q, %k, %v, %g : (tensor<1x4x8x16xf16>, tensor<1x2x0x16xf16>, tensor<1x2x0x16xf16>, tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %r : tensor<1x4x8x16xf16>
}

// -----

// MQA with 256 query heads per KV head: tiles stack 16 heads of 4 rows, so
// that a tile's IR (and compile time) does not grow with the group.
// CHECK-LABEL: func.func @mqa256
// CHECK: scf.forall {{.*}} to (1, 256, %{{.+}}) step (1, 16, 4)
// CHECK: tensor.extract_slice %arg0{{.*}} to tensor<1x16x?x64xf32>
// CHECK: tensor.extract_slice %arg1{{.*}} to tensor<1x1x?x64xf32>
func.func @mqa256(%q: tensor<1x256x?x64xf32>, %k: tensor<1x1x?x64xf32>, %v: tensor<1x1x?x64xf32>) -> tensor<1x256x?x64xf32> {
  %r = gated_attention.attention %q, %k, %v : (tensor<1x256x?x64xf32>, tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>) -> tensor<1x256x?x64xf32>
  return %r : tensor<1x256x?x64xf32>
}
