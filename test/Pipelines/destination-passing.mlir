// The torch op's functions take strided buffers (views of torch tensors:
// [q | gate] interleaved per head, [B, S, H, D] read as [B, H, S, D]) and
// store the result into the caller's buffer. The CPU pipeline computes the
// result in that buffer: no result-sized allocation, no copy into it.
// RUN: gated-attention-opt %s --gated-attention-to-llvm \
// RUN:   --mlir-print-ir-after=one-shot-bufferize 2>&1 >/dev/null | FileCheck %s
// And the whole pipeline lowers it.
// RUN: gated-attention-opt %s --gated-attention-to-llvm | FileCheck %s --check-prefix=LLVM

!q = memref<?x4x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>
!kv = memref<?x2x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>

// CHECK-LABEL: IR Dump After OneShotBufferize
// CHECK-LABEL: func.func @attention
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<?x4x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>)
// CHECK-NOT: memref.alloc({{.*}}memref<?x4x?x64xf32>
// CHECK-NOT: memref.copy %alloc{{.*}}, %[[OUT]]
// CHECK: return
// LLVM-LABEL: llvm.func @_mlir_ciface_attention
func.func @attention(%q: !q, %k: !kv, %v: !kv, %g: !q, %o: !q)
    attributes {llvm.emit_c_interface} {
  %qt = bufferization.to_tensor %q restrict : !q to tensor<?x4x?x64xf32>
  %kt = bufferization.to_tensor %k restrict : !kv to tensor<?x2x?x64xf32>
  %vt = bufferization.to_tensor %v restrict : !kv to tensor<?x2x?x64xf32>
  %gt = bufferization.to_tensor %g restrict : !q to tensor<?x4x?x64xf32>
  %r = gated_attention.attention %qt, %kt, %vt, %gt {causal}
      : (tensor<?x4x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>,
         tensor<?x4x?x64xf32>) -> tensor<?x4x?x64xf32>
  bufferization.materialize_in_destination %r in restrict writable %o
      : (tensor<?x4x?x64xf32>, !q) -> ()
  return
}
