// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   --canonicalize --cse | FileCheck %s --implicit-check-not=gated_attention.attention

// The sm_90a kernel (kernel=wgmma), FlashAttention-3's warp
// specialization: a producer warpgroup and two consumer warpgroups (384
// threads) per 128 query rows, K/V blocks of 128 keys. Shared memory (one
// extern array, 1024-aligned): Q 128x64, two stages of K 128x64 and V
// 128x128 bf16, then nine 8-byte mbarriers (full and empty per stage of K
// and of V, Q's): 16384 + 2 x 16384 + 2 x 32768 + 72 = 114760 bytes.
// The host makes a TMA map per operand over (B x H, S, width), boxes of
// rows x 64 (the 128-byte swizzle span), and passes it as a pointer; a
// null pointer when the tensor is empty (cuTensorMapEncodeTiled rejects a
// dimension of 0; the launch is skipped then).
// CHECK-LABEL: func.func @wgmma
// CHECK:      %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK:      %[[QNONEMPTY:.+]] = arith.cmpi ugt, %{{.+}}, %c0 : index
// CHECK:      %[[QP:.+]] = scf.if %[[QNONEMPTY]] -> (!llvm.ptr) {
// CHECK:        %[[Q:.+]] = nvgpu.tma.create.descriptor %{{.+}} box[%c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
// CHECK:        %[[QC:.+]] = builtin.unrealized_conversion_cast %[[Q]] {{.+}} to !llvm.ptr
// CHECK:        scf.yield %[[QC]] : !llvm.ptr
// CHECK:      } else {
// CHECK:        scf.yield %[[NULL]] : !llvm.ptr
// CHECK:      }
// CHECK:      nvgpu.tma.create.descriptor %{{.+}} box[%c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x128x64xbf16, 3>
// CHECK:      nvgpu.tma.create.descriptor %{{.+}} box[%c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x128x64xbf16, 3>
// CHECK:      gpu.launch_func @gated_attention_bf16_h4x2_d64_causal_sm90a::@gated_attention_bf16_h4x2_d64_causal_sm90a
// CHECK-SAME:   threads in (%c384, %c1, %c1) dynamic_shared_memory_size %c114760_i32 args(%[[QP]] : !llvm.ptr

// CHECK-LABEL: gpu.module @gated_attention_bf16_h4x2_d64_causal_sm90a
// CHECK:       llvm.mlir.global external @gated_attention_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// ptxas honours setmaxnreg only with a known register count at entry.
// CHECK:       gpu.func @gated_attention_bf16_h4x2_d64_causal_sm90a(%[[QMAP:.+]]: !llvm.ptr, %[[KMAP:.+]]: !llvm.ptr, %[[VMAP:.+]]: !llvm.ptr, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: index, %{{.+}}: index) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32}
// Descriptor constants: K-major (Q, K): SBO 1024 B, LBO 16 B, 128B swizzle;
// N-major (V): LBO = 128 rows x 128 B between its two column atoms.
// CHECK-DAG:   llvm.mlir.constant(4611686293305360384 : i64)
// CHECK-DAG:   llvm.mlir.constant(4611686293372403712 : i64)
// The warpgroup index, read from lane 0 so that ptxas keeps what derives
// from it in uniform registers.
// CHECK:       %[[TID:.+]] = gpu.thread_id x
// CHECK:       %[[WGT:.+]] = arith.divui %[[TID]], %c128
// CHECK-NEXT:  %[[WG32:.+]] = arith.index_cast %[[WGT]] : index to i32
// CHECK-NEXT:  %[[WGS:.+]], %{{.+}} = gpu.shuffle idx %[[WG32]], %c0_i32, %c32_i32 : i32
// CHECK-NEXT:  %[[WG:.+]] = arith.index_cast %[[WGS]] : i32 to index
// Thread 0 initializes the full barriers of K and V (1 arrival: the
// producer's expect_tx), their empty barriers (8: one per consumer warp),
// and Q's.
// CHECK:       nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK:       %[[EMPTYK0:.+]] = llvm.getelementptr %{{.+}}[114720]
// CHECK-NEXT:  nvvm.mbarrier.init %[[EMPTYK0]], %c8_i32
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.+}}, %c8_i32
// CHECK:       llvm.getelementptr %{{.+}}[114752]
// CHECK-NEXT:  nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK-NEXT:  nvvm.fence.mbarrier.init
// CHECK:       gpu.barrier
// The producer: warpgroup 0 gives up registers; its thread 0 loads Q (128 x
// 64 bf16 = 16384 bytes, one box), then block j's K and V tiles, each once
// the consumers have released its stage (parity ((j / 2) % 2) ^ 1: blocks
// 0 and 1 pass).
// CHECK:       %[[PRODUCER:.+]] = arith.cmpi eq, %[[WG]], %c0
// CHECK:       scf.if %[[PRODUCER]] {
// CHECK-NEXT:    nvvm.setmaxregister decrease 24
// CHECK:         nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c16384_i32
// CHECK:         nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[QMAP]], %{{.+}}, box[%c0_i32,
// CHECK:         scf.for %[[J:.+]] = %c0 to
// CHECK:           %[[HALF:.+]] = arith.divui %[[J]], %c2
// CHECK:           %[[USE:.+]] = arith.remui %[[HALF]], %c2
// CHECK:           %[[USE32:.+]] = arith.index_cast %[[USE]] : index to i32
// CHECK:           %[[FREE:.+]] = arith.xori %[[USE32]], %c1_i32
// CHECK:           arith.addi %{{.+}}, %c114720
// CHECK:           nvvm.mbarrier.try_wait.parity %{{.+}}, %[[FREE]]
// CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c16384_i32
// CHECK:           arith.muli %[[J]], %c128
// CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[KMAP]]
// CHECK:           arith.addi %{{.+}}, %c114736
// CHECK:           nvvm.mbarrier.try_wait.parity %{{.+}}, %[[FREE]]
// CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c32768_i32
// CHECK-COUNT-2:   nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[VMAP]]
// CHECK-NOT:       wgmma
// CHECK:       } else {
// The consumers take the registers; consumer c's A operand is rows
// 64c..64c+63 of the Q tile, 64 x 128 bytes further.
// CHECK:         %[[C:.+]] = arith.subi %[[WG]], %c1
// CHECK-NEXT:    nvvm.setmaxregister increase 240
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.+}}, %c0_i32
// CHECK-NEXT:    arith.muli %[[C]], %c8192
// CHECK:         %[[LANE0:.+]] = arith.cmpi eq, %{{.+}}, %c0 : index
// Pingpong (D <= 128, two consumers): consumer c takes its turn to issue
// GEMMs on named barrier 1 + c = its warpgroup index (bar.sync over 256
// threads) and passes it with a bar.arrive on the other's, 2 - c + 1;
// consumer 0 goes first, having arrived on its own barrier.
// Block 0, if the tile has any: S_0 = Q K_0^T (4 k16 steps of m64n128k16,
// both K-major, the first ignoring the accumulator), waited for, K_0
// released by lane 0 of each warp, then its softmax; P_0 is carried packed.
// K's step descriptors are its low word plus the step's offset, joined to
// the high word: the first half made before the fence, the other half each
// right before its wgmma (ptxas keeps them in uniform registers).
// CHECK:         %[[ANY:.+]] = arith.cmpi sgt, %[[N:.+]], %c0
// CHECK:         scf.if %[[ANY]] -> ({{.+}}) {
// CHECK:           nvvm.mbarrier.try_wait.parity %{{.+}}, %c0_i32
// CHECK-NEXT:      %[[FIRST:.+]] = arith.cmpi eq, %[[C]], %c0
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        nvvm.barrier.arrive id = %[[WGS]] number_of_threads = %c256_i32
// CHECK:           nvvm.barrier id = %[[WGS]] number_of_threads = %c256_i32
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK-NEXT:      nvvm.wgmma.mma_async {{.+}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT:      nvvm.wgmma.mma_async {{.+}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT:      %[[KLOW2:.+]] = llvm.add %{{.+}}, %{{.+}} : i32
// CHECK-NEXT:      %[[KSTEP2:.+]] = llvm.inline_asm asm_dialect = att "mov.b64 $0, {$1, $2};", "=l,r,r" %[[KLOW2]], %{{.+}} : (i32, i32) -> i64
// CHECK-NEXT:      nvvm.wgmma.mma_async %{{.+}}, %[[KSTEP2]], %{{.+}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT:      llvm.add
// CHECK-NEXT:      llvm.inline_asm asm_dialect = att "mov.b64
// CHECK-NEXT:      nvvm.wgmma.mma_async {{.+}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT:      nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:      %[[OTHER:.+]] = arith.subi %c3, %[[WG]]
// CHECK-NEXT:      %[[OTHER32:.+]] = arith.index_cast %[[OTHER]] : index to i32
// CHECK-NEXT:      nvvm.barrier.arrive id = %[[OTHER32]] number_of_threads = %c256_i32
// CHECK-NEXT:      nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT:      scf.if %[[LANE0]] {
// CHECK:             nvvm.mbarrier.arrive
// Raw scores: each weight is ex2.approx.ftz(fma(s, scale log2 e, -m)).
// CHECK:           llvm.intr.fma
// CHECK-NEXT:      llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NOT:       math.exp2
// CHECK-NOT:       wgmma
// CHECK:         } else {
// Blocks 1..n-1, counted in i32 (a 64-bit counter costs carries and
// double compares): wait for K_j (parity (j / 2) % 2); in its turn, issue
// S_j (its K descriptors from stage 0's plus the stage's offset, one
// multiply-add), wait for V_{j-1}, issue O += P_{j-1} V_{j-1} (8 k16
// steps, P from registers, V transposed) behind it, pass the turn; wait
// for S_j alone and release K_j; the softmax of block j runs while P V
// does; then wait for P V, release V_{j-1} and rescale O.
// CHECK:         %[[N32:.+]] = arith.index_cast %[[N]] : index to i32
// CHECK:         scf.for %[[J32:.+]] = %c1_i32 to %[[N32]] step %c1_i32
// CHECK-NEXT:      %[[J2:.+]] = arith.index_cast %[[J32]] : i32 to index
// CHECK:           %[[HALF2:.+]] = arith.divui %[[J2]], %c2
// CHECK:           %[[PHASE:.+]] = arith.remui %[[HALF2]], %c2
// CHECK:           %[[PHASE32:.+]] = arith.index_cast %[[PHASE]] : index to i32
// CHECK:           nvvm.mbarrier.try_wait.parity %{{.+}}, %[[PHASE32]]
// CHECK:           scf.if
// CHECK:             nvvm.barrier id
// CHECK:             arith.muli %{{.+}}, %c1024_i32 : i32
// CHECK:             nvvm.wgmma.fence.aligned
// CHECK-COUNT-4:     nvvm.wgmma.mma_async {{.+}}, <m = 64, n = 128, k = 16>
// CHECK-NEXT:        nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:        %[[PREV:.+]] = arith.divui %{{.+}}, %c2
// CHECK:             arith.addi %{{.+}}, %c114704
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.wgmma.fence.aligned
// CHECK-NEXT:        llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// CHECK-COUNT-7:     llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-NOT:         llvm.inline_asm
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK:             nvvm.barrier.arrive id
// CHECK-NEXT:        nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NEXT:        scf.if %[[LANE0]] {
// CHECK:               arith.addi %{{.+}}, %c114720
// CHECK:               nvvm.mbarrier.arrive
// CHECK:             llvm.intr.fma
// CHECK-NEXT:        llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NOT:         wgmma
// The tile's last block (a branch the others skip) scales its P and O's
// factors by 1 / (2 l): O leaves the loop divided by 2 l.
// CHECK:             %[[ISLAST:.+]] = arith.cmpi eq, %{{.+}}, %{{.+}} : i32
// CHECK-NEXT:        scf.if %[[ISLAST]] -> (f32,
// CHECK:               gpu.shuffle  xor
// CHECK:               nvvm.rcp.approx.ftz.f
// CHECK:             } else {
// CHECK-NOT:         wgmma
// CHECK:             nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT:        scf.if %[[LANE0]] {
// CHECK:               arith.addi %{{.+}}, %c114736
// CHECK:               nvvm.mbarrier.arrive
// CHECK:             arith.mulf
// CHECK:           } else {
// The last block's P V; only consumer 0 passes the turn (consumer 1 takes
// no further one).
// CHECK:         scf.if %[[ANY]]
// CHECK:           nvvm.barrier id
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           nvvm.wgmma.fence.aligned
// CHECK-COUNT-8:   llvm.inline_asm has_side_effects
// CHECK-NOT:       llvm.inline_asm
// CHECK:           nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:      %[[LAST:.+]] = arith.cmpi eq, %[[C]], %c0
// CHECK-NEXT:      scf.if %[[LAST]] {
// CHECK:             nvvm.barrier.arrive id
// CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT:      scf.if %[[LANE0]] {
// CHECK:             nvvm.mbarrier.arrive
// The gated epilogue, on the mma.sync kernel's layout: each pair of gates
// halved in bf16 and unpacked by a shift and a mask, sigmoid(g) / l as
// (1 + tanh.approx(g / 2)) / 2l, y = o + o t.
// CHECK:         arith.mulf %{{.+}}, %{{.+}} : vector<2xbf16>
// CHECK-NEXT:    vector.bitcast %{{.+}} : vector<2xbf16> to vector<1xi32>
// CHECK:         arith.shli %{{.+}}, %c16_i32 : i32
// CHECK-NEXT:    arith.andi %{{.+}}, %c-65536_i32 : i32
// CHECK:         %[[T:.+]] = llvm.intr.tanh(%{{.+}}) {fastmathFlags = #llvm.fastmath<afn>}
// CHECK:         llvm.intr.fma(%[[O:[^,]+]], %[[T]], %[[O]])
// CHECK:         arith.truncf %{{.+}} : vector<2xf32> to vector<2xbf16>
// CHECK:         vector.store
// CHECK-NOT:     gpu.shuffle
// CHECK-NOT:     nvvm.rcp.approx
// CHECK-NOT:     wgmma
// CHECK:       gpu.return
// One consumer warpgroup (warps=4): 256 threads, setmaxnreg 56 / 256, and
// no pingpong (nobody to take turns with).
// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma warps=4" \
// RUN:   | FileCheck %s --check-prefix=ONE
// ONE-LABEL: gpu.func @gated_attention_bf16_h4x2_d64_causal_sm90a
// ONE-SAME:    known_block_size = array<i32: 256, 1, 1>
// ONE:         nvvm.setmaxregister decrease 56
// ONE:         nvvm.setmaxregister increase 256
// ONE-NOT:     nvvm.barrier
// ONE:         gpu.return
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
