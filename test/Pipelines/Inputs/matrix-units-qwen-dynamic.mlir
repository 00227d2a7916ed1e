module {
func.func @attention(%q: memref<?x16x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x2x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x2x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %g: memref<?x16x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x16x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) attributes {llvm.emit_c_interface} {
  %qt = bufferization.to_tensor %q restrict : memref<?x16x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x16x?x256xbf16>
  %kt = bufferization.to_tensor %k restrict : memref<?x2x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x2x?x256xbf16>
  %vt = bufferization.to_tensor %v restrict : memref<?x2x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x2x?x256xbf16>
  %gt = bufferization.to_tensor %g restrict : memref<?x16x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<?x16x?x256xbf16>
  %r:1 = gated_attention.attention %qt, %kt, %vt, %gt {causal}
      : (tensor<?x16x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x16x?x256xbf16>) -> (tensor<?x16x?x256xbf16>)
  bufferization.materialize_in_destination %r#0 in restrict writable %o : (tensor<?x16x?x256xbf16>, memref<?x16x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}
}
