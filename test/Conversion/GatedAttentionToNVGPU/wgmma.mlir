// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   --canonicalize --cse | FileCheck %s --implicit-check-not=gated_attention.attention

// The sm_90a kernel (kernel=wgmma): one warpgroup of 128 threads per 64
// query rows, K/V blocks of 128 keys. Shared memory (one extern array,
// 1024-aligned): Q 64x64, two stages of K 128x64 and V 128x128 bf16, then
// three 8-byte mbarriers: 8192 + 2 x 16384 + 2 x 32768 + 24 = 106520 bytes.
// The host makes a TMA map per operand over (B x H, S, width), boxes of
// rows x 64 (the 128-byte swizzle span), and passes it as a pointer.
// CHECK-LABEL: func.func @wgmma
// CHECK:      %[[Q:.+]] = nvgpu.tma.create.descriptor %{{.+}} box[%c1, %c64, %c64] : memref<*xbf16> -> <tensor = memref<1x64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
// CHECK:      %[[QP:.+]] = builtin.unrealized_conversion_cast %[[Q]] {{.+}} to !llvm.ptr
// CHECK:      nvgpu.tma.create.descriptor %{{.+}} box[%c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x128x64xbf16, 3>
// CHECK:      nvgpu.tma.create.descriptor %{{.+}} box[%c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x128x64xbf16, 3>
// CHECK:      gpu.launch_func @gated_attention_bf16_h4x2_d64_causal_sm90a::@gated_attention_bf16_h4x2_d64_causal_sm90a
// CHECK-SAME:   threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c106520_i32 args(%[[QP]] : !llvm.ptr

// CHECK-LABEL: gpu.module @gated_attention_bf16_h4x2_d64_causal_sm90a
// CHECK:       llvm.mlir.global external @gated_attention_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK:       gpu.func @gated_attention_bf16_h4x2_d64_causal_sm90a(%[[QMAP:.+]]: !llvm.ptr, %[[KMAP:.+]]: !llvm.ptr, %[[VMAP:.+]]: !llvm.ptr, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: index, %{{.+}}: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// Descriptor constants: K-major (Q, K): SBO 1024 B, LBO 16 B, 128B swizzle;
// N-major (V): LBO = 128 rows x 128 B between its two column atoms.
// CHECK-DAG:   llvm.mlir.constant(4611686293305360384 : i64)
// CHECK-DAG:   llvm.mlir.constant(4611686293372403712 : i64)
// The lead thread initializes the two stage barriers and Q's, count 1.
// CHECK:       nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK-NEXT:  llvm.getelementptr
// CHECK-NEXT:  nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK-NEXT:  llvm.getelementptr
// CHECK-NEXT:  nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK-NEXT:  nvvm.fence.mbarrier.init
// CHECK:       gpu.barrier
// Q: 64 x 64 bf16 = 8192 bytes, one box; block 0: K (one box) and V (two).
// CHECK:       nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c8192_i32
// CHECK:       nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[QMAP]], %{{.+}}, box[%c0_i32,
// CHECK:       nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c49152_i32
// CHECK-COUNT-1: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[KMAP]]
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[VMAP]]
// CHECK:       nvvm.mbarrier.try_wait.parity %{{.+}}, %c0_i32
// The key loop: barrier, refill the other stage with block j + 1, wait for
// block j with phase (j / 2) % 2.
// CHECK:       scf.for %[[J:.+]] = %c0 to
// CHECK:         gpu.barrier
// CHECK:         nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c49152_i32
// CHECK:         %[[HALF:.+]] = arith.divui %[[J]], %c2
// CHECK:         %[[PHASE:.+]] = arith.remui %[[HALF]], %c2
// CHECK:         %[[PHASE32:.+]] = arith.index_cast %[[PHASE]] : index to i32
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.+}}, %[[PHASE32]]
// S = Q K^T: 4 k16 steps of m64n128k16, both K-major, the first ignoring
// the accumulator; everything waited for before the softmax.
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK-NEXT:    nvvm.wgmma.mma_async {{.+}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.+}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT:    nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:    nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:         math.exp2
// O += P V: 8 k16 steps over the 128 keys, P from registers, V transposed
// (trans-b 1), N = Dv = 128.
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK-NEXT:    llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// CHECK-COUNT-7: llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-NOT:     llvm.inline_asm
// CHECK:         nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:    nvvm.wgmma.wait.group.sync.aligned 0
// The gated epilogue of the mma.sync kernel, on the same layout.
// CHECK:       gpu.shuffle xor
// CHECK:       vector.store
func.func @wgmma(%q: tensor<2x4x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x128xbf16>, %g: tensor<2x4x?x128xbf16>) -> tensor<2x4x?x128xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<2x4x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x128xbf16>, tensor<2x4x?x128xbf16>) -> tensor<2x4x?x128xbf16>
  return %r : tensor<2x4x?x128xbf16>
}

// -----

// Head dims that are not multiples of 64 get the mma.sync kernel, which
// runs on sm_90a too.
// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   | FileCheck %s --check-prefix=FALLBACK
// FALLBACK-LABEL: func.func @d80
// FALLBACK:       gpu.launch_func @gated_attention_f16_h2x2_d80_nogate::
// FALLBACK-NOT:   tma.create.descriptor
// FALLBACK-LABEL: gpu.module @gated_attention_f16_h2x2_d80_nogate
// FALLBACK:       nvvm.mma.sync
func.func @d80(%q: tensor<1x2x?x80xf16>, %k: tensor<1x2x?x80xf16>, %v: tensor<1x2x?x80xf16>) -> tensor<1x2x?x80xf16> {
  %r = gated_attention.attention %q, %k, %v
      : (tensor<1x2x?x80xf16>, tensor<1x2x?x80xf16>, tensor<1x2x?x80xf16>) -> tensor<1x2x?x80xf16>
  return %r : tensor<1x2x?x80xf16>
}
