// RUN: gated-attention-opt %s --split-input-file \
// RUN:   --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s --split-input-file \
// RUN:   --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   --mlir-print-op-generic | FileCheck %s --check-prefix=BODY
// RUN: gated-attention-opt %s --split-input-file \
// RUN:   --convert-gated-attention-to-nvgpu="chip=sm_80" \
// RUN:   --mlir-print-op-generic | FileCheck %s --check-prefix=SM80
// kernel=auto on sm_90a keeps the mma.sync backward (only the forward's
// wgmma kernel has run on a GPU yet):
// RUN: gated-attention-opt %s --split-input-file \
// RUN:   --convert-gated-attention-to-nvgpu="chip=sm_90a" \
// RUN:   --mlir-print-op-generic | FileCheck %s --check-prefix=SM80

// With kernel=wgmma (chip sm_90a) the dK/dV and dQ kernels are the
// warp-specialized ones: a producer warpgroup and one consumer warpgroup
// per 64 keys or 64 query rows (256 threads), their shared memory (the
// resident tiles, two stages of 32 streamed rows of each of two tiles at
// D = 128 for dK/dV, of 64 for dQ, the mbarriers) asked for at launch; the
// preprocessing stays SIMT.
// CHECK-LABEL: func.func @gqa
// CHECK:         gpu.launch_func @{{.+}}_bwd_pre::@{{.+}} blocks in
// CHECK:         gpu.launch_func @[[KV:gated_attention_bf16_h8x2_d128_causal_bwd_kv_sm90a]]::@[[KV]] blocks in (%{{.+}}, %c2, %{{.+}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c65576_i32
// CHECK:         gpu.launch_func @[[Q:gated_attention_bf16_h8x2_d128_causal_bwd_q_sm90a]]::@[[Q]] blocks in (%{{.+}}, %c8, %{{.+}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c98344_i32
// CHECK-NOT:     gated_attention.attention_backward
// Each: setmaxnreg for the two roles, the producer's cp.async row copies
// arriving on mbarriers, the consumers' two products against the streamed
// tiles as SS wgmma (nvvm.wgmma.mma_async) and the gradients' as
// register-A wgmma (inline PTX); no mma.sync.
// BODY: sym_name = "gated_attention_bf16_h8x2_d128_causal_bwd_kv_sm90a"
// BODY: nvvm.setmaxregister
// BODY: nvvm.cp.async.shared.global
// BODY: nvvm.cp.async.mbarrier.arrive
// BODY: nvvm.setmaxregister
// BODY: nvvm.wgmma.mma_async
// BODY: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// BODY-NOT: nvvm.mma.sync
// BODY: sym_name = "gated_attention_bf16_h8x2_d128_causal_bwd_kv_sm90a"
// BODY-NOT: nvvm.mma.sync
// BODY: sym_name = "gated_attention_bf16_h8x2_d128_causal_bwd_q_sm90a"
// BODY: nvvm.setmaxregister
// BODY: nvvm.cp.async.mbarrier.arrive
// BODY: nvvm.wgmma.mma_async
// BODY: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// BODY-NOT: nvvm.mma.sync
// BODY: sym_name = "gated_attention_bf16_h8x2_d128_causal_bwd_q_sm90a"
// Without kernel=wgmma (sm_80, or auto on sm_90a) every kernel is
// mma.sync's:
// SM80-NOT: wgmma.mma_async
// SM80: sym_name = "gated_attention_bf16_h8x2_d128_causal_bwd_kv"
// SM80-NOT: wgmma.mma_async
// SM80: sym_name = "gated_attention_bf16_h8x2_d128_causal_bwd_q"
// SM80-NOT: wgmma.mma_async
func.func @gqa(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %o: tensor<?x8x?x128xbf16>, %do: tensor<?x8x?x128xbf16>, %g: tensor<?x8x?x128xbf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x128xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
      -> (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x128xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x8x?x128xbf16>
}

// -----

// D = 256: two consumer warpgroups split the columns of dK and dV (384
// threads), each accumulating 128 of them (m64n128 register-A wgmma); dQ
// has one, all 256 columns in one m64n256 wgmma.
// CHECK-LABEL: func.func @d256
// CHECK:         gpu.launch_func @[[KV:gated_attention_f16_h4x4_d256_nogate_bwd_kv_sm90a]]::@[[KV]] blocks in (%{{.+}}, %c4, %c1) threads in (%c384, %c1, %c1)
// CHECK:         gpu.launch_func @[[Q:gated_attention_f16_h4x4_d256_nogate_bwd_q_sm90a]]::@[[Q]] blocks in (%{{.+}}, %c4, %c1) threads in (%c256, %c1, %c1)
// BODY: sym_name = "gated_attention_f16_h4x4_d256_nogate_bwd_kv_sm90a"
// BODY: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// BODY: sym_name = "gated_attention_f16_h4x4_d256_nogate_bwd_kv_sm90a"
// BODY: sym_name = "gated_attention_f16_h4x4_d256_nogate_bwd_q_sm90a"
// BODY: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
// BODY: sym_name = "gated_attention_f16_h4x4_d256_nogate_bwd_q_sm90a"
func.func @d256(%q: tensor<1x4x?x256xf16>, %k: tensor<1x4x?x256xf16>, %v: tensor<1x4x?x256xf16>, %o: tensor<1x4x?x256xf16>, %do: tensor<1x4x?x256xf16>, %lse: tensor<1x4x?xf32>) -> (tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>) {
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>, tensor<1x4x?xf32>)
      -> (tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>)
  return %r#0, %r#1, %r#2 : tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>, tensor<1x4x?x256xf16>
}

// -----

// Head dims that are no whole column atoms per consumer (D = 96) keep the
// mma.sync dK/dV and dQ kernels under kernel=wgmma.
// CHECK-LABEL: func.func @d96
// CHECK:         gpu.launch_func @[[KV:gated_attention_bf16_h2x2_d96_nogate_bwd_kv]]::@[[KV]] blocks in (%{{.+}}, %c2, %c1) threads in (%c128, %c1, %c1)
// CHECK:         gpu.launch_func @[[Q:gated_attention_bf16_h2x2_d96_nogate_bwd_q]]::@[[Q]] blocks in (%{{.+}}, %c2, %c1) threads in (%c128, %c1, %c1)
func.func @d96(%q: tensor<1x2x?x96xbf16>, %k: tensor<1x2x?x96xbf16>, %v: tensor<1x2x?x96xbf16>, %o: tensor<1x2x?x96xbf16>, %do: tensor<1x2x?x96xbf16>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>) {
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?xf32>)
      -> (tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>
}
