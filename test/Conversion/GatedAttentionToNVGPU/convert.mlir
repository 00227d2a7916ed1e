// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --canonicalize --verify-diagnostics > %t
// RUN: FileCheck %s --input-file=%t --implicit-check-not=gated_attention.attention
// RUN: FileCheck %s --input-file=%t --check-prefix=UNMASKED

// Two causal bf16 ops of one configuration (D = 64: 4 warps, 128-key
// blocks) share one kernel, launched on (ceildiv(Sq, 64), Hq, B) CTAs of 128
// threads with 64x64 + 2 x (2 x 128x64) bf16 = 73728 bytes of dynamic shared
// memory; the launch description goes on the module.
// CHECK: module attributes {gated_attention.kernels = {gated_attention_bf16_h8x2_d64_causal = "{{.*}}\22dynamic_shared_memory\22:73728{{.*}}\22grid\22:{{\[}}[\22Sq\22,64],[\22Hq\22,1],[\22B\22,1]]{{.*}}\22schema\22:\22gated-attention.launch\22,\22version\22:4}"}, gpu.container_module}
// CHECK-LABEL: func.func @shared_kernel
// CHECK:       %[[SQ:.+]] = tensor.dim %{{.+}}, %c2 : tensor<2x8x?x64xbf16>
// CHECK:       %[[BLOCKS:.+]] = arith.ceildivui %[[SQ]], %c64
// CHECK:       gpu.launch_func @gated_attention_bf16_h8x2_d64_causal::@gated_attention_bf16_h8x2_d64_causal
// CHECK-SAME:    blocks in (%[[BLOCKS]], %c8, %c2) threads in (%c128, %c1, %c1)
// CHECK-SAME:    dynamic_shared_memory_size %c73728_i32
// Then the (B, H) strides of q, of k and v (one pair: D = Dv), of the
// gate and of out, as extract_strided_metadata gives them.
// CHECK-SAME:    args(%{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %[[SQ]] : index, %{{.+}} : index, %[[QSTR:[^#]+]]#0 : index, %[[QSTR]]#1 : index, %[[KSTR:[^#]+]]#0 : index, %[[KSTR]]#1 : index, %{{[^ ]+}}#0 : index, %{{[^ ]+}}#1 : index, %{{[^ ]+}}#0 : index, %{{[^ ]+}}#1 : index)
// CHECK:       gpu.launch_func @gated_attention_bf16_h8x2_d64_causal::@gated_attention_bf16_h8x2_d64_causal

// The kernel: Q, K[2], V[2] in dynamic shared memory, filled by cp.async
// (zero-fill operand for rows past the end); Q waits alone before the loop,
// then each key block refills the other buffer and waits for its own.
// CHECK:       gpu.module @gated_attention_bf16_h8x2_d64_causal
// Q's slab starts at b * QB + h * QH.
// CHECK:       gpu.func @gated_attention_bf16_h8x2_d64_causal(%[[Q:.+]]: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %[[G:.+]]: memref<?xbf16>, %[[O:.+]]: memref<?xbf16>, %{{[^:]+}}: index, %{{[^:]+}}: index, %[[QB:[^:]+]]: index, %[[QH:[^:]+]]: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %{{[^:]+}}: index) kernel
// CHECK-SAME:    known_block_size = array<i32: 128, 1, 1>
// CHECK-DAG:   arith.muli %{{.+}}, %[[QB]] : index
// CHECK-DAG:   arith.muli %{{.+}}, %[[QH]] : index
// CHECK:       %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK:       %[[QT:.+]] = memref.view %[[SMEM]][%c0][] {{.*}} to memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK:       memref.view %[[SMEM]][%c8192][] {{.*}} to memref<2x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK:       %[[VT:.+]] = memref.view %[[SMEM]][%c40960][] {{.*}} to memref<2x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK:       nvgpu.device_async_copy %[[Q]][%{{.+}}], %[[QT]][%{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// CHECK:       nvgpu.device_async_wait %{{.+}} {numGroups = 0 : i32}
// CHECK-NEXT:  gpu.barrier
// CHECK:       nvgpu.ldmatrix %[[QT]]{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK:       scf.for {{.+}} iter_args
// CHECK:         gpu.barrier
// CHECK:         nvgpu.device_async_wait %{{.+}} {numGroups = 1 : i32}
// CHECK-NEXT:    gpu.barrier
// Diagonal and tail blocks take the masked branch; the other branch has no
// compare at all (the UNMASKED lines scan it from `else` to its scf.yield).
// UNMASKED-LABEL: gpu.func @gated_attention_bf16_h8x2_d64_causal
// UNMASKED:         } else {
// UNMASKED-NOT:       arith.cmpi
// UNMASKED:           scf.yield
// CHECK:         scf.if %{{.+}} -> (f32,
// CHECK:           nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:           arith.cmpi slt
// CHECK:           gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK:           gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK:           math.exp2
// CHECK:           nvgpu.ldmatrix %[[VT]]{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK:         } else {
// CHECK:           nvvm.mma.sync
// CHECK:         }
// Epilogue, per row half: rows in range load all of their gate pairs
// (32-bit accesses) before any output store, then apply sigmoid and store
// each output pair once.
// CHECK:       scf.if
// CHECK-COUNT-8: vector.load %[[G]][%{{.+}}] {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK:         math.exp
// CHECK:         vector.store %{{.+}}, %[[O]][%{{.+}}] {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK-NOT:     vector.load %[[G]]
// CHECK:       scf.if
// CHECK-COUNT-8: vector.load %[[G]][%{{.+}}] {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK-NOT:     vector.load %[[G]]
// CHECK:         vector.store %{{.+}}, %[[O]]
// CHECK-NOT:   gpu.module
func.func @shared_kernel(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>, %g: tensor<2x8x?x64xbf16>) -> (tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>) {
  %0 = gated_attention.attention %q, %k, %v, %g {causal} : (tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x8x?x64xbf16>) -> tensor<2x8x?x64xbf16>
  %1 = gated_attention.attention %q, %k, %v, %0 {causal} : (tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x8x?x64xbf16>) -> tensor<2x8x?x64xbf16>
  return %0, %1 : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
}

// -----

// f16 takes vector<2xf16> operands; a headwise gate is one scalar per row;
// configurations that differ (here the gate layout and the activation) get
// kernels of their own. D = 256 uses 8 warps and 32-key blocks: 128x256 +
// 4 x 32x256 f16 = 131072 bytes.
// CHECK-LABEL: func.func @f16_headwise
// CHECK:       gpu.launch_func @[[K1:gated_attention_f16_h4x4_d256_headwise(_1)?]]::
// CHECK-SAME:    threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c131072_i32
// CHECK:       gpu.launch_func @[[K2:gated_attention_f16_h4x4_d256_headwise(_1)?]]::
// CHECK:       gpu.module @gated_attention_f16_h4x4_d256_headwise
// CHECK:         nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:         memref.load %{{.+}}[%{{.+}}] : memref<?xf16>
// CHECK-NOT:     vector.load
// CHECK:       gpu.module @gated_attention_f16_h4x4_d256_headwise_1
func.func @f16_headwise(%q: tensor<1x4x100x256xf16>, %k: tensor<1x4x100x256xf16>, %v: tensor<1x4x100x256xf16>, %g: tensor<1x4x100x1xf16>) -> (tensor<1x4x100x256xf16>, tensor<1x4x100x256xf16>) {
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x4x100x256xf16>, tensor<1x4x100x256xf16>, tensor<1x4x100x256xf16>, tensor<1x4x100x1xf16>) -> tensor<1x4x100x256xf16>
  %1 = gated_attention.attention %q, %k, %v, %g {gate = #gated_attention.gate<silu>} : (tensor<1x4x100x256xf16>, tensor<1x4x100x256xf16>, tensor<1x4x100x256xf16>, tensor<1x4x100x1xf16>) -> tensor<1x4x100x256xf16>
  return %0, %1 : tensor<1x4x100x256xf16>, tensor<1x4x100x256xf16>
}

// -----

// f32, and head dims that are not multiples of 16, are left for the SIMT
// lowering.
// CHECK-LABEL: func.func @not_for_tensor_cores
// CHECK-COUNT-2: gated_attention.attention
// CHECK-NOT:   gpu.launch_func
func.func @not_for_tensor_cores(%q: tensor<1x2x8x64xf32>, %k: tensor<1x2x8x64xf32>, %v: tensor<1x2x8x64xf32>, %g: tensor<1x2x8x64xf32>,
                                %q2: tensor<1x2x8x40xbf16>, %k2: tensor<1x2x8x40xbf16>, %v2: tensor<1x2x8x40xbf16>, %g2: tensor<1x2x8x40xbf16>) -> (tensor<1x2x8x64xf32>, tensor<1x2x8x40xbf16>) {
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32>
  %1 = gated_attention.attention %q2, %k2, %v2, %g2 : (tensor<1x2x8x40xbf16>, tensor<1x2x8x40xbf16>, tensor<1x2x8x40xbf16>, tensor<1x2x8x40xbf16>) -> tensor<1x2x8x40xbf16>
  return %0, %1 : tensor<1x2x8x64xf32>, tensor<1x2x8x40xbf16>
}

// -----

// Without a gate operand the kernel is the `_nogate` variant: the epilogue
// divides by the row sum and stores; it reads no gate and computes no
// activation (the only exponentials are the softmax's exp2).
// CHECK-LABEL: func.func @no_gate
// CHECK:       gpu.launch_func @gated_attention_bf16_h2x2_d128_nogate::
// CHECK:       gpu.module @gated_attention_bf16_h2x2_d128_nogate
// CHECK-NOT:     math.exp {{.*}} : f32
// CHECK-NOT:     vector.load
// CHECK:         gpu.return
func.func @no_gate(%q: tensor<1x2x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16> {
  %0 = gated_attention.attention %q, %k, %v : (tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16>
  return %0 : tensor<1x2x?x128xbf16>
}
