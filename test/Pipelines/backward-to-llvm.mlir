// The CPU pipeline lowers the backward op, in both its modes, to the LLVM
// (and OpenMP) dialects: nothing of the op, linalg or tensors is left.
// RUN: gated-attention-opt %s --gated-attention-to-llvm | FileCheck %s \
// RUN:   --implicit-check-not=gated_attention. --implicit-check-not=linalg. \
// RUN:   --implicit-check-not=tensor. --implicit-check-not=bufferization.
// RUN: gated-attention-opt %s --gated-attention-to-llvm=reference=1 \
// RUN:   | FileCheck %s --implicit-check-not=gated_attention. \
// RUN:   --implicit-check-not=linalg. --implicit-check-not=tensor.

// CHECK-LABEL: llvm.func @backward
// CHECK-LABEL: llvm.func @_mlir_ciface_backward
func.func @backward(%q: memref<?x4x?x16xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %k: memref<?x2x?x16xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %v: memref<?x2x?x8xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %o: memref<?x4x?x8xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %do: memref<?x4x?x8xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %g: memref<?x1x?x1xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %dq: memref<?x4x?x16xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %dk: memref<?x2x?x16xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %dv: memref<?x2x?x8xbf16, strided<[?, ?, ?, 1], offset: ?>>,
                    %dg: memref<?x1x?x1xbf16, strided<[?, ?, ?, 1], offset: ?>>)
    attributes {llvm.emit_c_interface} {
  %qt = bufferization.to_tensor %q restrict : memref<?x4x?x16xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x4x?x16xbf16>
  %kt = bufferization.to_tensor %k restrict : memref<?x2x?x16xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x2x?x16xbf16>
  %vt = bufferization.to_tensor %v restrict : memref<?x2x?x8xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x2x?x8xbf16>
  %ot = bufferization.to_tensor %o restrict : memref<?x4x?x8xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x4x?x8xbf16>
  %dot = bufferization.to_tensor %do restrict : memref<?x4x?x8xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x4x?x8xbf16>
  %gt = bufferization.to_tensor %g restrict : memref<?x1x?x1xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x1x?x1xbf16>
  %r:4 = gated_attention.attention_backward %qt, %kt, %vt, %ot, %dot, %gt {causal, gate = #gated_attention.gate<silu>}
      : (tensor<?x4x?x16xbf16>, tensor<?x2x?x16xbf16>, tensor<?x2x?x8xbf16>, tensor<?x4x?x8xbf16>, tensor<?x4x?x8xbf16>, tensor<?x1x?x1xbf16>)
      -> (tensor<?x4x?x16xbf16>, tensor<?x2x?x16xbf16>, tensor<?x2x?x8xbf16>, tensor<?x1x?x1xbf16>)
  bufferization.materialize_in_destination %r#0 in restrict writable %dq : (tensor<?x4x?x16xbf16>, memref<?x4x?x16xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  bufferization.materialize_in_destination %r#1 in restrict writable %dk : (tensor<?x2x?x16xbf16>, memref<?x2x?x16xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  bufferization.materialize_in_destination %r#2 in restrict writable %dv : (tensor<?x2x?x8xbf16>, memref<?x2x?x8xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  bufferization.materialize_in_destination %r#3 in restrict writable %dg : (tensor<?x1x?x1xbf16>, memref<?x1x?x1xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}
