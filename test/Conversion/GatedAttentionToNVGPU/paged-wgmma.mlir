// RUN: gated-attention-opt %s --split-input-file \
// RUN:   --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   --canonicalize --cse | FileCheck %s --implicit-check-not=cp.async.bulk.tensor

// The paged op on sm_90a (D = 64: two consumer warpgroups of 64 rows, 128
// keys a block; Hq = 4 over Hkv = 2): the direct launch is the warp-
// specialized kernel (384 threads), its 128 rows 64 queries x the 2 query
// heads of a K/V head, grid (ceildiv(T, 64) + B, Hq / 2); split-KV keeps
// mma.sync's split kernel, whose 64-row CTAs take 32 queries: its grid is
// its own, (ceildiv(T, 32) + B, 2, splits).
// CHECK: gated_attention_paged16_bf16_h4x2_d64_causal_sm90a = "{{.*}}\22grid\22:{{\[}}[\22T\22,64,\22B\22],[\22Hq\22,2],[\22one\22,1]]{{.*}}\22instructions\22:\22wgmma\22{{.*}}\22layout\22:\22paged\22
// CHECK-LABEL: func.func @paged
// CHECK-DAG:   %[[T:.+]] = tensor.dim %arg0, %c0 : tensor<?x4x64xbf16>
// CHECK-DAG:   %[[B:.+]] = tensor.dim %arg4, %c0 : tensor<?xi32>
// CHECK:       %[[BLOCKS:.+]] = arith.ceildivui %[[T]], %c64
// CHECK:       %[[X:.+]] = arith.addi %[[BLOCKS]], %[[B]]
// CHECK:       %[[SPLITS:.+]] = arith.maxui
// CHECK:       %[[SPLIT_BLOCKS:.+]] = arith.ceildivui %[[T]], %c32
// CHECK:       %[[SPLIT_X:.+]] = arith.addi %[[SPLIT_BLOCKS]], %[[B]]
// CHECK:       gpu.launch_func @gated_attention_paged16_bf16_h4x2_d64_causal_split::@gated_attention_paged16_bf16_h4x2_d64_causal_split
// CHECK-SAME:    blocks in (%[[SPLIT_X]], %c2, %[[SPLITS]]) threads in (%c128, %c1, %c1)
// CHECK:       gpu.launch_func @gated_attention_paged16_bf16_h4x2_d64_causal_merge::@gated_attention_paged16_bf16_h4x2_d64_causal_merge
// CHECK:       gpu.launch_func @gated_attention_paged16_bf16_h4x2_d64_causal_sm90a::@gated_attention_paged16_bf16_h4x2_d64_causal_sm90a
// CHECK-SAME:    blocks in (%[[X]], %c2, %c1) threads in (%c384, %c1, %c1)
// CHECK-SAME:    : memref<?xbf16>, {{.+}} : memref<?xbf16>, {{.+}} : memref<?xbf16>

// The kernel: its K/V caches are memrefs (no tensor map anywhere), the full
// barriers (K and V, two stages each, and Q's) count the producer
// warpgroup's 128 threads, the empty ones the 8 consumer warps.
// CHECK-LABEL: gpu.func @gated_attention_paged16_bf16_h4x2_d64_causal_sm90a(
// CHECK-SAME:    %arg0: memref<?xbf16>, %arg1: memref<?xbf16>, %arg2: memref<?xbf16>
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.+}}, %c128_i32
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.+}}, %c8_i32
// CHECK:         nvvm.mbarrier.init %{{.+}}, %c128_i32
// The producer: global pointers to Q, K and V, then every thread copies
// chunk t % 8 of Q rows t / 8, t / 8 + 16, ... (a rolled loop: few
// registers), packed (token r / 2, head r % 2), into the swizzled layout
// (chunk c
// of row r at its atom + r x 128 + ((c % 8) ^ (r % 8)) x 16), rows past the
// sequence's queries zero-filled (src-size 0), and arrives (noinc) once its
// copies landed.
// CHECK:         nvvm.setmaxregister decrease 24
// CHECK:         memref.extract_aligned_pointer_as_index %arg0
// CHECK:         llvm.addrspacecast %{{.+}} : !llvm.ptr to !llvm.ptr<1>
// CHECK:         %[[FIRST:.+]] = arith.divui %thread_id_x, %c8
// CHECK:         scf.for %[[R:.+]] = %[[FIRST]] to %c128 step %c16 {
// CHECK:           arith.remui %{{.+}}, %c2
// CHECK:           %[[ROW:.+]] = arith.divui %{{.+}}, %c2
// CHECK:           %[[VALID:.+]] = arith.cmpi slt, %[[ROW]],
// CHECK:           %[[CHUNK:.+]] = arith.remui %{{.+}}, %c8
// CHECK:           %[[PHASE:.+]] = arith.remui %[[R]], %c8
// CHECK:           arith.xori %[[CHUNK]], %[[PHASE]]
// CHECK:           %[[SIZE:.+]] = arith.select %[[VALID]], %c16_i32, %c0_i32
// CHECK:           nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache = cg, %[[SIZE]]
// CHECK:         }
// CHECK-NEXT:    nvvm.cp.async.mbarrier.arrive %{{.+}} {noinc = true}
// Then K and V of each key block once its stage is free: a key's row
// through the block table, loaded only for keys below the sequence's
// length (a past-the-end key may lie past the table, or in garbage).
// CHECK:         scf.for
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           scf.for
// CHECK:             %[[KEY_VALID:.+]] = arith.cmpi slt
// CHECK:             scf.if %[[KEY_VALID]] -> (index) {
// CHECK:               memref.load %arg5
// CHECK:             nvvm.cp.async.shared.global
// CHECK:           nvvm.cp.async.mbarrier.arrive %{{.+}} {noinc = true}
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           nvvm.cp.async.shared.global
// CHECK:           nvvm.cp.async.mbarrier.arrive %{{.+}} {noinc = true}
// The consumers fence the copies' (generic proxy) writes against wgmma's
// (async proxy) reads after every wait for a tile.
// CHECK:         nvvm.setmaxregister increase 240
// CHECK:         nvvm.mbarrier.try_wait.parity
// CHECK-NEXT:    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK:         nvvm.wgmma.mma_async
// CHECK:       gpu.return
func.func @paged(%q: tensor<?x4x64xbf16>, %kc: tensor<?x16x2x64xbf16>, %vc: tensor<?x16x2x64xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>, %g: tensor<?x4x64xbf16>) -> tensor<?x4x64xbf16> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu, %g {causal}
      : (tensor<?x4x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x4x64xbf16>) -> tensor<?x4x64xbf16>
  return %r : tensor<?x4x64xbf16>
}

// -----

// Qwen3-Next's heads (D = 256, Hq = 16 over Hkv = 2, 528-token pages): one
// consumer warpgroup of 256 registers (the producer keeps 56) and 64-key
// blocks; 64 rows are 8 queries x the 8 query heads of a K/V head.
// CHECK: gated_attention_paged528_bf16_h16x2_d256_sm90a = "{{.*}}\22block\22:{{\[}}256,1,1]{{.*}}\22grid\22:{{\[}}[\22T\22,8,\22B\22],[\22Hq\22,8],[\22one\22,1]]{{.*}}\22key_block\22:64
// CHECK-LABEL: gpu.func @gated_attention_paged528_bf16_h16x2_d256_sm90a(
// CHECK:         nvvm.setmaxregister decrease 56
// CHECK:         nvvm.setmaxregister increase 256
func.func @qwen(%q: tensor<?x16x256xbf16>, %kc: tensor<?x528x2x256xbf16>, %vc: tensor<?x528x2x256xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>, %g: tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu, %g
      : (tensor<?x16x256xbf16>, tensor<?x528x2x256xbf16>, tensor<?x528x2x256xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16>
  return %r : tensor<?x16x256xbf16>
}
