// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --mlir-print-op-generic | FileCheck %s --check-prefix=BODY

// The backward op becomes three launches in order: the preprocessing
// (D into an f32 scratch buffer, dY into another, dG) on (ceildiv(Sq, 128),
// Hq / Hg, B); dK/dV on (ceildiv(Skv, 64), Hkv, B) and dQ on
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
// CHECK:           gpu.launch_func @[[PRE:gated_attention_bf16_h8x2_d64_causal_bwd_pre]]::@[[PRE]] blocks in (%{{.+}}, %c8, %[[B]]) threads in (%c128, %c1, %c1)
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
func.func @gqa(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %g: tensor<?x8x?x64xbf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
      -> (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>
}

// -----

// A shared gate: one preprocessing CTA row per batch (grid y = Hq / Hg =
// 1), its thread summing dG over the 4 heads.
// CHECK-LABEL: func.func @shared_gate
// CHECK:         gpu.launch_func @{{.+}}_bwd_pre::@{{.+}} blocks in (%{{.+}}, %c1, %c2)
func.func @shared_gate(%q: tensor<2x4x?x64xf16>, %k: tensor<2x4x?x64xf16>, %v: tensor<2x4x?x64xf16>, %o: tensor<2x4x?x64xf16>, %do: tensor<2x4x?x64xf16>, %g: tensor<2x1x?x64xf16>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x1x?x64xf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse)
      : (tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x1x?x64xf16>, tensor<2x4x?xf32>)
      -> (tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x1x?x64xf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x4x?x64xf16>, tensor<2x1x?x64xf16>
}
