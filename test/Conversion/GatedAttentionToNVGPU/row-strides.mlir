// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --canonicalize --verify-diagnostics | FileCheck %s

// gated_attention.row_strides: the kernel reads q and the gate with rows
// 128 elements apart (the [q | gate] halves of one [B, S, H, 2D]
// projection, as a launcher outside MLIR passes them) and K, V and out
// row-major. The rows are constants of the kernel; a launch from MLIR,
// whose buffers are row-major, first copies q and the gate into buffers laid
// out so: [B, H, S] strides (H * S * 128, S * 128, 128).
// CHECK-LABEL: func.func @packed_halves
// CHECK-SAME:    (%[[Q:.+]]: tensor<1x2x?x64xbf16>, %{{.+}}, %{{.+}}, %[[G:.+]]: tensor<1x2x?x64xbf16>)
// CHECK:         %[[QB:.+]] = bufferization.to_buffer %[[Q]]
// CHECK:         %[[QF:.+]] = memref.alloc(%{{.+}}) : memref<?xbf16>
// CHECK:         %[[QV:.+]] = memref.reinterpret_cast %[[QF]] to offset: [0], sizes: [1, 2, %{{.+}}, 64], strides: [%{{.+}}, %{{.+}}, 128, 1]
// CHECK:         memref.copy %[[QB]], %[[QV]]
// CHECK:         %[[GB:.+]] = bufferization.to_buffer %[[G]]
// CHECK:         %[[GF:.+]] = memref.alloc(%{{.+}}) : memref<?xbf16>
// CHECK:         memref.copy %[[GB]], %{{.+}}
// CHECK:         gpu.launch_func @[[K:.+]]::@{{.+}} blocks
// CHECK-SAME:      args(%[[QF]] : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %[[GF]] : memref<?xbf16>,
// CHECK-NOT:     memref.copy
// CHECK:         return
// The kernel steps q's rows by 128 elements, K's by 64.
// CHECK:       gpu.func @[[K]](
// CHECK-DAG:     arith.muli %{{.+}}, %c128 : index
// CHECK-DAG:     arith.muli %{{.+}}, %c64 : index
func.func @packed_halves(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x1x?x64xbf16>, %v: tensor<1x1x?x64xbf16>, %g: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal, gated_attention.row_strides = array<i64: 128, 64, 64, 128, 64>} : (tensor<1x2x?x64xbf16>, tensor<1x1x?x64xbf16>, tensor<1x1x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16>
  return %0 : tensor<1x2x?x64xbf16>
}

// -----

// The output written [B, S, H, Dv] (rows H * Dv = 128 apart): a launch from
// MLIR copies it back into the row-major result.
// CHECK-LABEL: func.func @bshd_output
// CHECK:         %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<1x2x?x64xbf16>
// CHECK:         %[[OF:.+]] = memref.alloc(%{{.+}}) : memref<?xbf16>
// CHECK:         %[[OV:.+]] = memref.reinterpret_cast %[[OF]]
// CHECK:         gpu.launch_func
// CHECK:         memref.copy %[[OV]], %[[OUT]]
// CHECK:         bufferization.to_tensor %[[OUT]]
func.func @bshd_output(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %0 = gated_attention.attention %q, %k, %v {gated_attention.row_strides = array<i64: 64, 64, 64, 1, 128>} : (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16>
  return %0 : tensor<1x2x?x64xbf16>
}

// -----

// Rows must start 16-byte aligned for the cp.async copies.
func.func @misaligned(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  // expected-error @+1 {{tensor-core kernel for sm_90: the q row stride 68 must be a multiple of 8 elements (16-byte aligned rows)}}
  %0 = gated_attention.attention %q, %k, %v {gated_attention.row_strides = array<i64: 68, 64, 64, 1, 64>} : (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16>
  return %0 : tensor<1x2x?x64xbf16>
}

// -----

// With D = Dv, K and V share their (B, H) strides, so their rows agree.
func.func @key_value_apart(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  // expected-error @+1 {{key and value share their batch and head strides (D = Dv): their row strides must agree, got 128 and 64}}
  %0 = gated_attention.attention %q, %k, %v {gated_attention.row_strides = array<i64: 64, 128, 64, 1, 64>} : (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16>
  return %0 : tensor<1x2x?x64xbf16>
}
