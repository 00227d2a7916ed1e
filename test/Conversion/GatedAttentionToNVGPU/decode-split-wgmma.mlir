// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   --canonicalize --cse | FileCheck %s

// A decode step (static Sq = 1) with kernel=wgmma takes split-KV as the
// mma.sync kernel does (decode-split.mlir): the split and merge kernels are
// mma.sync's (the warp-specialized kernel has no split form), so the split
// kernel reads Q, K and V as buffers while the direct sm_90a kernel, taken
// when the B x Hq tiles fill the GPU, reads them through TMA maps.
// CHECK-LABEL: func.func @decode
// CHECK-SAME:    (%{{[^:]+}}: tensor<2x16x1x128xbf16>, %[[K:[^:]+]]: tensor<2x2x?x128xbf16>,
// CHECK:         %[[SKV:.+]] = tensor.dim %[[K]], %c2
// CHECK:         %[[QMAP:.+]] = builtin.unrealized_conversion_cast %{{.+}} to !llvm.ptr
// K and V's maps are null when Skv = 0 (Q's shape is static and not empty).
// CHECK:         %[[KMAP:.+]] = scf.if %{{.+}} -> (!llvm.ptr) {
// CHECK:         %[[VMAP:.+]] = scf.if %{{.+}} -> (!llvm.ptr) {
// CHECK:         %[[Q:.+]] = memref.cast %{{.+}} : memref<4096xbf16> to memref<?xbf16>
// CHECK:         %[[KBUF:.+]] = memref.collapse_shape {{.+}} : memref<2x2x?x128xbf16> into memref<?xbf16>
// CHECK:         %[[VBUF:.+]] = memref.collapse_shape {{.+}} : memref<2x2x?x128xbf16> into memref<?xbf16>
// CHECK:         %[[G:.+]] = memref.cast %{{.+}} : memref<4096xbf16> to memref<?xbf16>
// CHECK:         %[[OUT:.+]] = memref.cast %{{.+}} : memref<4096xbf16> to memref<?xbf16>
// A split's CTAs pack the 8 heads of a K/V head: B x Hq / 8 = 4 CTAs,
// min(ceildiv(264, 4) = 66, ceildiv(Skv, 256), 64).
// CHECK:         %[[FITTING:.+]] = arith.ceildivui %[[SKV]], %c256
// CHECK:         %[[MOST:.+]] = arith.minui %[[FITTING]], %c64
// CHECK:         %[[MIN:.+]] = arith.minui %[[MOST]], %c66
// CHECK:         %[[SPLITS:.+]] = arith.maxui %[[MIN]], %c1
// CHECK:         %[[MANY:.+]] = arith.cmpi ugt, %[[SPLITS]], %c1
// CHECK:         scf.if %[[MANY]] {
// CHECK:           gpu.launch_func @[[SPLITK:gated_attention_bf16_h16x2_d128_split]]::@[[SPLITK]] blocks in (%[[SPLITS]], %c2, %c2) threads in (%c128, %c1, %c1)
// CHECK-SAME:        args(%[[Q]] : memref<?xbf16>, %[[KBUF]] : memref<?xbf16>, %[[VBUF]] : memref<?xbf16>, %[[G]] : memref<?xbf16>, %[[OUT]] : memref<?xbf16>, %c1 : index, %[[SKV]] : index,
// CHECK:           gpu.launch_func @[[MERGE:gated_attention_bf16_h16x2_d128_merge]]::@[[MERGE]] blocks in (%c2, %c16, %c1)
// CHECK-SAME:        args(%[[G]] : memref<?xbf16>, %[[OUT]] : memref<?xbf16>,
// CHECK:         } else {
// CHECK:           gpu.launch_func @[[DIRECT:gated_attention_bf16_h16x2_d128_sm90a]]::@[[DIRECT]] blocks in (%c1, %c16, %c2) threads in (%c384, %c1, %c1)
// CHECK-SAME:        args(%[[QMAP]] : !llvm.ptr, %[[KMAP]] : !llvm.ptr, %[[VMAP]] : !llvm.ptr, %[[G]] : memref<?xbf16>, %[[OUT]] : memref<?xbf16>, %c1 : index, %[[SKV]] : index,
// CHECK:         }
// The split kernel is mma.sync's (four warps, buffers), the direct one the
// warp-specialized kernel.
// CHECK-DAG: gpu.module @gated_attention_bf16_h16x2_d128_sm90a
// CHECK-DAG: gpu.func @gated_attention_bf16_h16x2_d128_split(%{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>,
// CHECK-DAG: gpu.func @gated_attention_bf16_h16x2_d128_merge
func.func @decode(%q: tensor<2x16x1x128xbf16>, %k: tensor<2x2x?x128xbf16>,
                  %v: tensor<2x2x?x128xbf16>, %g: tensor<2x16x1x128xbf16>) -> tensor<2x16x1x128xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<2x16x1x128xbf16>, tensor<2x2x?x128xbf16>, tensor<2x2x?x128xbf16>, tensor<2x16x1x128xbf16>) -> tensor<2x16x1x128xbf16>
  return %0 : tensor<2x16x1x128xbf16>
}
