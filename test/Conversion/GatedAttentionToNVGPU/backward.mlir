// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --mlir-print-op-generic | FileCheck %s --check-prefix=BODY
// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=COALESCED

// The backward op becomes three launches in order: the preprocessing
// (D into an f32 scratch buffer, dY into another, dG) on (ceildiv(Sq, 16),
// Hg, B) (8 lanes to a row of 64 columns: 16 rows to a CTA of 128 threads); dK/dV on (ceildiv(Skv, 64), Hkv, B) and dQ on
// (ceildiv(Sq, 64), Hq, B), both reading the lse operand. Launches whose
// grids would be empty are skipped (dK and dV need Skv > 0, dQ and the
// preprocessing Sq > 0).
// CHECK-LABEL: func.func @gqa
// CHECK:         %[[B:.+]] = tensor.dim %arg0, %c0
// CHECK:         %[[SQ:.+]] = tensor.dim %arg0, %c2
// CHECK:         %[[SKV:.+]] = tensor.dim %arg1, %c2
// CHECK:         %[[LSE:.+]] = memref.collapse_shape {{.+}} : memref<?x8x?xf32> into memref<?xf32>
// CHECK:         %[[DELTA:.+]] = memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK:         scf.if %[[ROWS:.+]] {
// CHECK:           %[[PREX:.+]] = arith.ceildivui %[[SQ]], %c16
// CHECK:           gpu.launch_func @[[PRE:gated_attention_bf16_h8x2_d64_causal_bwd_pre]]::@[[PRE]] blocks in (%[[PREX]], %c8, %[[B]]) threads in (%c128, %c1, %c1)
// CHECK-SAME:        %[[DELTA]] : memref<?xf32>, %[[SQ]] : index)
// CHECK:         scf.if %{{.+}} {
// CHECK:           gpu.launch_func @[[KV:gated_attention_bf16_h8x2_d64_causal_bwd_kv]]::@[[KV]] blocks in (%{{.+}}, %c2, %[[B]]) threads in (%c128, %c1, %c1)
// CHECK-SAME:        %[[LSE]] : memref<?xf32>, %[[DELTA]] : memref<?xf32>, {{.+}}, %[[SQ]] : index, %[[SKV]] : index)
// CHECK:         scf.if %[[ROWS]] {
// CHECK:           gpu.launch_func @[[Q:gated_attention_bf16_h8x2_d64_causal_bwd_q]]::@[[Q]] blocks in (%{{.+}}, %c8, %[[B]]) threads in (%c128, %c1, %c1)
// CHECK-SAME:        %[[LSE]] : memref<?xf32>, %[[DELTA]] : memref<?xf32>, {{.+}}, %[[SQ]] : index, %[[SKV]] : index)
// CHECK-NOT:     gated_attention.attention_backward
// The tensor-core kernels multiply on mma.sync with operands from ldmatrix
// and cp.async copies; the preprocessing does not.
// BODY: "gpu.func"() <{function_type = {{.+}}}> ({
// BODY-NOT: nvvm.mma.sync
// BODY: sym_name = "gated_attention_bf16_h8x2_d64_causal_bwd_pre"
// BODY: nvgpu.device_async_copy
// BODY: nvgpu.ldmatrix
// BODY: nvvm.mma.sync
// BODY: sym_name = "gated_attention_bf16_h8x2_d64_causal_bwd_kv"
// BODY: nvgpu.device_async_copy
// BODY: nvgpu.ldmatrix
// BODY: nvvm.mma.sync
// BODY: sym_name = "gated_attention_bf16_h8x2_d64_causal_bwd_q"
// The preprocessing is coalesced: the 8 lanes of a row of 64 columns each
// read 8 columns of the gate, dOut and out as one 16-byte vector, store
// dY and dG as such, and sum D's products over the row's lanes by xor
// shuffles (1, 2, 4: within the 8); no loop over the columns.
// COALESCED-LABEL: gpu.func @gated_attention_bf16_h8x2_d64_causal_bwd_pre
// COALESCED-NOT:     scf.for
// COALESCED:         %[[CHUNK:.+]] = arith.remui %{{.+}}, %c8
// COALESCED:         %[[COL:.+]] = arith.muli %[[CHUNK]], %c8
// COALESCED:         %[[AT:.+]] = arith.addi %{{.+}}, %[[COL]]
// COALESCED:         vector.load %arg2[%[[AT]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// COALESCED:         vector.load %arg1[%[[AT]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// COALESCED:         vector.load %arg0[%[[AT]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// COALESCED:         vector.store %{{.+}}, %arg3[%[[AT]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// COALESCED:         gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// COALESCED:         gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// COALESCED:         gpu.shuffle  xor %{{.+}}, %c4_i32, %c32_i32 : f32
// COALESCED-NOT:     gpu.shuffle
// COALESCED:         memref.store %{{.+}}, %arg5[%{{.+}}] : memref<?xf32>
// COALESCED:         vector.store %{{.+}}, %arg4[%[[AT]]] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// COALESCED-NOT:     scf.for
// COALESCED:         gpu.return
func.func @gqa(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %g: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
      -> (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>
}

// -----

// A shared gate: one preprocessing CTA row per batch (grid y = Hg = 1),
// each row's lanes reading the gate once and adding dG's terms over the 4
// heads in registers.
// CHECK-LABEL: func.func @shared_gate
// CHECK:         gpu.launch_func @{{.+}}_bwd_pre::@{{.+}} blocks in (%{{.+}}, %c1, %c2)
// COALESCED-LABEL: gpu.func @gated_attention_f16_h4x4_d64_bwd_pre
// COALESCED:         vector.load %arg2[%{{.+}}] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// COALESCED:         %[[GRAD:.+]] = scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<8xf32>)
// COALESCED:           vector.load %arg1
// COALESCED:           vector.load %arg0
// COALESCED:           vector.store %{{.+}}, %arg3
// COALESCED:           memref.store %{{.+}}, %arg5
// COALESCED:           scf.yield %{{.+}} : vector<8xf32>
// COALESCED:         %[[ROUNDED:.+]] = arith.truncf %[[GRAD]] : vector<8xf32> to vector<8xf16>
// COALESCED:         vector.store %[[ROUNDED]], %arg4
func.func @shared_gate(%q: tensor<2x4x?x64xf16>, %k: tensor<2x4x?x64xf16>, %v: tensor<2x4x?x64xf16>, %o: tensor<2x4x?x64xf16>, %do: tensor<2x4x?x64xf16>, %g: tensor<2x1x?x64xf16>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x1x?x64xf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse)
      : (tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x1x?x64xf16>, tensor<2x4x?xf32>)
      -> (tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x1x?x64xf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x1x?x64xf16>
}

// -----

// Without a gate the preprocessing writes only D, a CTA row per query head
// (grid y = Hq = 4), with 16 lanes to a row of 128 columns: 8 rows to a
// CTA, and no loop over heads.
// CHECK-LABEL: func.func @no_gate
// CHECK:         %[[SQ:.+]] = tensor.dim %arg0, %c2
// CHECK:         %[[X:.+]] = arith.ceildivui %[[SQ]], %c8
// CHECK:         gpu.launch_func @{{.+}}_nogate_bwd_pre::@{{.+}} blocks in (%[[X]], %c4, %c2)
// COALESCED-LABEL: gpu.func @gated_attention_bf16_h4x1_d128_nogate_bwd_pre
// COALESCED-NOT:     scf.for
// COALESCED:         vector.load %arg1[%{{.+}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// COALESCED:         vector.load %arg0[%{{.+}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// COALESCED-COUNT-4: gpu.shuffle  xor
// COALESCED-NOT:     vector.store
// COALESCED:         memref.store %{{.+}}, %arg5[%{{.+}}] : memref<?xf32>
// COALESCED-NOT:     vector.store
// COALESCED:         gpu.return
func.func @no_gate(%q: tensor<2x4x?x128xbf16>, %k: tensor<2x1x?x128xbf16>, %v: tensor<2x1x?x128xbf16>, %o: tensor<2x4x?x128xbf16>, %do: tensor<2x4x?x128xbf16>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x1x?x128xbf16>) {
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<2x4x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x4x?x128xbf16>, tensor<2x4x?x128xbf16>, tensor<2x4x?xf32>)
      -> (tensor<2x4x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x1x?x128xbf16>)
  return %r#0, %r#1, %r#2 : tensor<2x4x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x1x?x128xbf16>
}

// -----

// Above D = 128 two warps share each 16-row tile's dK/dV columns. Warp 0
// of a pair computes S^T = K Q^T and warp 1 dP^T = V dY^T (D / 16 = 12
// steps of two 8-column MMAs each), and they trade them through an f32
// area after the tiles (8 warps x 8 registers x 32 lanes; 49,152 + 8,192
// bytes), not each computing both, which spilled at D 160 to 224.
// CHECK-LABEL: func.func @column_split
// CHECK:         gpu.launch_func @{{.+}}_d192_nogate_bwd_kv::@{{.+}} threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c57344_i32
// CHECK-LABEL: gpu.func @gated_attention_f16_h2x2_d192_nogate_bwd_kv
// CHECK:         %[[X:.+]] = memref.view %{{.+}}[%c49152][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2048xf32, #gpu.address_space<workgroup>>
// CHECK:         scf.for
// CHECK:           %[[P:.+]]:8 = scf.if %{{.+}} -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-24:    nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK:           } else {
// CHECK-COUNT-24:    nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK:           memref.store %[[P]]#0, %[[X]][%{{.+}}] : memref<2048xf32, #gpu.address_space<workgroup>>
// CHECK-NOT:       nvvm.mma.sync
// CHECK:           gpu.barrier
// CHECK-NOT:       nvvm.mma.sync
// CHECK:           memref.load %[[X]][%{{.+}}] : memref<2048xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-24:  nvvm.mma.sync
// CHECK-NOT:       nvvm.mma.sync
// CHECK:           scf.yield
func.func @column_split(%q: tensor<1x2x?x192xf16>, %k: tensor<1x2x?x192xf16>, %v: tensor<1x2x?x192xf16>, %o: tensor<1x2x?x192xf16>, %do: tensor<1x2x?x192xf16>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>) {
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>, tensor<1x2x?xf32>)
      -> (tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>, tensor<1x2x?x192xf16>
}
