// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --canonicalize --cse --verify-diagnostics | FileCheck %s
// Tiles the user chose must fit the paged kernel too: an error at the op.
// RUN: not gated-attention-opt %s --split-input-file \
// RUN:   --convert-gated-attention-to-nvgpu="warps=16 key-block=16" 2>&1 | FileCheck %s --check-prefix=TILES
// TILES: paged.mlir:{{[0-9]+}}:8: error: tensor-core kernel for sm_90: warps must be in [1, 8], got 16

// A bf16 paged op (D = 64: 4 warps, 128-key blocks, 16-token pages; Hq = 4
// over Hkv = 2) becomes one launch on flat buffers: each CTA's 64 rows are
// 32 queries x the 2 query heads of one K/V head, grid (ceildiv(T, 32) + B,
// Hq / 2) with no host-side lengths; block table, seq_lens and cu_seqlens_q
// go to the kernel as i32 buffers with B and MB. Its launch description
// says so.
// CHECK: gated_attention_paged16_bf16_h4x2_d64_causal = "{{.*}}\22grid\22:{{\[}}[\22T\22,32,\22B\22],[\22Hq\22,2],[\22one\22,1]]{{.*}}\22layout\22:\22paged\22{{.*}}\22page_size\22:16{{.*}}\22version\22:4}"
// CHECK-LABEL: func.func @paged
// CHECK-DAG:   %[[T:.+]] = tensor.dim %arg0, %c0 : tensor<?x4x64xbf16>
// CHECK-DAG:   %[[B:.+]] = tensor.dim %arg4, %c0 : tensor<?xi32>
// CHECK-DAG:   %[[MB:.+]] = tensor.dim %arg3, %c1 : tensor<?x?xi32>
// CHECK:       %[[BLOCKS:.+]] = arith.ceildivui %[[T]], %c32
// CHECK:       %[[X:.+]] = arith.addi %[[BLOCKS]], %[[B]]
// Split-KV when the grid is small: splits = max(min(ceildiv(264, CTAs),
// ceildiv(MB * P, 256), 64), 1), host-side sizes only; the split kernel
// (grid z = splits) writes f32 partials [splits, T, Hq, Dv] and
// [splits, T, Hq], the merge kernel (a CTA per (token, head), a thread per
// column pair) combines them and applies the gate; else the direct kernel.
// CHECK:       %[[CTAS:.+]] = arith.muli %[[X]], %c2
// CHECK:       %[[CAP:.+]] = arith.muli %[[MB]], %c16
// CHECK:       %[[WANT:.+]] = arith.ceildivui %c264, %[[CTAS]]
// CHECK:       %[[FIT:.+]] = arith.ceildivui %[[CAP]], %c256
// CHECK:       %[[MOST:.+]] = arith.minui %[[FIT]], %c64
// CHECK:       %[[MIN:.+]] = arith.minui %[[WANT]], %[[MOST]]
// CHECK:       %[[SPLITS:.+]] = arith.maxui %[[MIN]], %c1
// CHECK:       scf.if
// CHECK:         %[[PO:.+]] = memref.alloc({{.+}}) : memref<?xf32>
// CHECK:         %[[PL:.+]] = memref.alloc({{.+}}) : memref<?xf32>
// CHECK:         gpu.launch_func @gated_attention_paged16_bf16_h4x2_d64_causal_split::@gated_attention_paged16_bf16_h4x2_d64_causal_split
// CHECK-SAME:      blocks in (%[[X]], %c2, %[[SPLITS]]) threads in (%c128, %c1, %c1)
// CHECK-SAME:      %[[PO]] : memref<?xf32>, %[[PL]] : memref<?xf32>, %[[SPLITS]] : index, %[[T]] : index)
// CHECK:         gpu.launch_func @gated_attention_paged16_bf16_h4x2_d64_causal_merge::@gated_attention_paged16_bf16_h4x2_d64_causal_merge
// CHECK-SAME:      blocks in (%[[T]], %c4, %c1) threads in (%c32, %c1, %c1)
// CHECK-SAME:      %[[PO]] : memref<?xf32>, %[[PL]] : memref<?xf32>, %[[T]] : index, %[[SPLITS]] : index)
// CHECK-NOT:         memref.dealloc
// CHECK:       } else {
// CHECK:         gpu.launch_func @gated_attention_paged16_bf16_h4x2_d64_causal::@gated_attention_paged16_bf16_h4x2_d64_causal
// CHECK-SAME:      blocks in (%[[X]], %c2, %c1) threads in (%c128, %c1, %c1)
// CHECK-SAME:      args({{.*}} : memref<?xi32>, %{{.+}} : memref<?xi32>, %{{.+}} : memref<?xi32>, %[[B]] : index, %[[MB]] : index)

// The kernel: its sequence counted from cu_seqlens_q (one load per
// sequence, no dependent search), idle CTAs past the sequence's blocks
// skip everything (a uniform branch around the barriers), and a K/V row's
// page id is loaded only for rows inside the sequence.
// CHECK:       gpu.func @gated_attention_paged16_bf16_h4x2_d64_causal(%{{.+}}: memref<?xbf16>, %[[KC:[^:]+]]: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %[[TABLE:[^:]+]]: memref<?xi32>, %[[LENS:[^:]+]]: memref<?xi32>, %[[CU:[^:]+]]: memref<?xi32>, %[[NSEQ:[^:]+]]: index, %[[WIDTH:[^:]+]]: index) kernel
// CHECK:       %[[SEQ:.+]] = scf.for %{{.+}} = %c1 to %[[NSEQ]] step %c1 iter_args
// CHECK:         memref.load %[[CU]]
// CHECK:       scf.if
// CHECK:         memref.load %[[LENS]][%[[SEQ]]]
// CHECK:         arith.muli %[[SEQ]], %[[WIDTH]]
// CHECK:         scf.if %{{.+}} -> (index) {
// CHECK:           memref.load %[[TABLE]]
// CHECK:           arith.muli %{{.+}}, %c16
// CHECK:         } else {
// CHECK:           scf.yield %c0 : index
// CHECK:         nvgpu.device_async_copy %[[KC]]
// CHECK:       gpu.return

// The split kernel: its part of the key blocks, then O / l stored as f32
// pairs and, by one lane per row, m + log2(l) (-inf for an empty part).
// CHECK:       gpu.func @gated_attention_paged16_bf16_h4x2_d64_causal_split({{.*}}%[[PO:[^:]+]]: memref<?xf32>, %[[PL:[^:]+]]: memref<?xf32>, %[[NSPLIT:[^:]+]]: index, %{{[^:]+}}: index) kernel
// CHECK:         %[[SPLIT:.+]] = gpu.block_id  z
// CHECK:         %[[CHUNK:.+]] = arith.ceildivui %{{.+}}, %[[NSPLIT]]
// CHECK:         arith.muli %[[SPLIT]], %[[CHUNK]]
// CHECK:         scf.for
// CHECK:         math.log2
// CHECK:         vector.store %{{.+}}, %[[PO]][%{{.+}}] {alignment = 8 : i64} : memref<?xf32>, vector<2xf32>
// CHECK:         memref.store %{{.+}}, %[[PL]][%{{.+}}] : memref<?xf32>
// CHECK:       gpu.return

// The merge: one online pass over the splits (maximumf: a NaN part stays
// NaN), then the gate, once.
// CHECK:       gpu.func @gated_attention_paged16_bf16_h4x2_d64_causal_merge(%[[G:[^:]+]]: memref<?xbf16>, %[[O:[^:]+]]: memref<?xbf16>, %{{[^:]+}}: memref<?xf32>, %[[L:[^:]+]]: memref<?xf32>, %{{[^:]+}}: index, %[[N:[^:]+]]: index) kernel
// CHECK:         scf.for %{{.+}} = %c0 to %[[N]] step %c1 iter_args
// CHECK:           memref.load %[[L]]
// CHECK:           arith.maximumf
// CHECK:           math.exp2
// CHECK:         vector.load %[[G]]
// CHECK:         arith.negf
// CHECK:         vector.store %{{.+}}, %[[O]]
// CHECK:       gpu.return
func.func @paged(%q: tensor<?x4x64xbf16>, %kc: tensor<?x16x2x64xbf16>, %vc: tensor<?x16x2x64xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>, %g: tensor<?x4x64xbf16>) -> tensor<?x4x64xbf16> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu, %g {causal}
      : (tensor<?x4x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x4x64xbf16>) -> tensor<?x4x64xbf16>
  return %r : tensor<?x4x64xbf16>
}

// -----

// f32 has no tensor-core kernel: the op stays for unpaging.
// CHECK-LABEL: func.func @paged_f32
// CHECK:       gated_attention.paged_attention
// CHECK-NOT:   gpu.launch_func
func.func @paged_f32(%q: tensor<?x4x64xf32>, %kc: tensor<?x16x2x64xf32>, %vc: tensor<?x16x2x64xf32>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x64xf32> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu
      : (tensor<?x4x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x64xf32>
  return %r : tensor<?x4x64xf32>
}

