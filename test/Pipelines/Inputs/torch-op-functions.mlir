// Two functions of the torch op's kind (B, Sq, Skv dynamic; a full and a
// partial version of each query tile), from
// gated_attention.mlir.destination_function, H 8, D 64, causal, sigmoid
// gate: one f32, one bf16. The input of deterministic.test.
module {
func.func @f32_causal(%q: memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>, %g: memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>) attributes {llvm.emit_c_interface} {
  %qt = bufferization.to_tensor %q restrict : memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x8x?x64xf32>
  %kt = bufferization.to_tensor %k restrict : memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x8x?x64xf32>
  %vt = bufferization.to_tensor %v restrict : memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x8x?x64xf32>
  %gt = bufferization.to_tensor %g restrict : memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x8x?x64xf32>
  %r:1 = gated_attention.attention %qt, %kt, %vt, %gt {causal}
      : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>)
  bufferization.materialize_in_destination %r#0 in restrict writable %o : (tensor<?x8x?x64xf32>, memref<?x8x?x64xf32, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}
func.func @bf16_causal(%q: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %g: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>) attributes {llvm.emit_c_interface} {
  %qt = bufferization.to_tensor %q restrict : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x8x?x64xbf16>
  %kt = bufferization.to_tensor %k restrict : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x8x?x64xbf16>
  %vt = bufferization.to_tensor %v restrict : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x8x?x64xbf16>
  %gt = bufferization.to_tensor %g restrict : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x8x?x64xbf16>
  %r:1 = gated_attention.attention %qt, %kt, %vt, %gt {causal}
      : (tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>) -> (tensor<?x8x?x64xbf16>)
  bufferization.materialize_in_destination %r#0 in restrict writable %o : (tensor<?x8x?x64xbf16>, memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}
}
