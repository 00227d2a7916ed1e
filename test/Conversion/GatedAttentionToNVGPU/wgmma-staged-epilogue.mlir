// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   | FileCheck %s

// At Dv = 256 the sm_90a kernel's epilogue stages its rows in the consumer's
// Q rows (FlashKernelConfig::stagesOutput): after a barrier of the
// warpgroup, lane 0 copies the warp's 16 gate rows in (one bulk copy on the
// warp's mbarrier, 8 after Q's: 229448 + 64 bytes of shared memory), the
// warp reads them with ldmatrix and writes its output over them with
// stmatrix (16 blocks of 16 x 16), then lane 0 copies the rows below Sq out
// and waits for the copy to have read them. No 32-bit stores remain.
// CHECK-LABEL: func.func @staged
// CHECK:       gpu.launch_func @gated_attention_bf16_h16x2_d256_causal_sm90a::
// CHECK-SAME:    dynamic_shared_memory_size %c229512_i32
// CHECK-LABEL: gpu.func @gated_attention_bf16_h16x2_d256_causal_sm90a
// CHECK-COUNT-16: nvvm.mbarrier.init
// The warpgroup's barrier follows its last wgmma (no pingpong at D 256).
// CHECK:       nvvm.barrier id = %{{.+}} number_of_threads = %{{.+}}
// CHECK-NOT:   nvvm.wgmma
// CHECK:       nvvm.mbarrier.arrive.expect_tx
// CHECK:       nvvm.cp.async.bulk.shared.cluster.global %{{.+}} : !llvm.ptr<7>, <1>
// CHECK:       nvvm.mbarrier.try_wait.parity
// CHECK-COUNT-16: nvvm.stmatrix
// CHECK-NOT:   nvvm.ldmatrix
// CHECK:       nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK:       nvvm.bar.warp.sync
// CHECK:       nvvm.cp.async.bulk.global.shared.cta
// CHECK:       nvvm.cp.async.bulk.commit.group
// CHECK:       nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK:       gpu.return
func.func @staged(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>, %v: tensor<1x2x?x256xbf16>, %g: tensor<1x16x?x256xbf16>) -> tensor<1x16x?x256xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>) -> tensor<1x16x?x256xbf16>
  return %r : tensor<1x16x?x256xbf16>
}

// -----

// A headwise gate (one value a row) is loaded by each lane as before; only
// the output goes through shared memory, and no gate barriers are made.
// CHECK-LABEL: func.func @headwise
// CHECK:       dynamic_shared_memory_size %c229448_i32
// CHECK-LABEL: gpu.func
// CHECK-COUNT-9: nvvm.mbarrier.init
// CHECK-NOT:   nvvm.mbarrier.init
// CHECK:       nvvm.barrier id
// CHECK-NOT:   nvvm.ldmatrix
// CHECK-NOT:   nvvm.cp.async.bulk.shared.cluster.global
// CHECK-COUNT-16: nvvm.stmatrix
// CHECK:       nvvm.cp.async.bulk.global.shared.cta
// CHECK:       gpu.return
func.func @headwise(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>, %v: tensor<1x2x?x256xbf16>, %g: tensor<1x16x?x1xbf16>) -> tensor<1x16x?x256xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x1xbf16>) -> tensor<1x16x?x256xbf16>
  return %r : tensor<1x16x?x256xbf16>
}

// -----

// Dv = 128: the register path (each lane stores its column pairs), which
// the staging's fixed cost does not beat there.
// CHECK-LABEL: func.func @narrow
// CHECK-LABEL: gpu.func
// CHECK-NOT:   nvvm.stmatrix
// CHECK-NOT:   nvvm.cp.async.bulk.global.shared.cta
// CHECK:       vector.store %{{.+}} {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK-NOT:   nvvm.stmatrix
// CHECK:       gpu.return
func.func @narrow(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x16x?x128xbf16>, %v: tensor<1x16x?x128xbf16>, %g: tensor<1x16x?x128xbf16>) -> tensor<1x16x?x128xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x128xbf16>, tensor<1x16x?x128xbf16>, tensor<1x16x?x128xbf16>, tensor<1x16x?x128xbf16>) -> tensor<1x16x?x128xbf16>
  return %r : tensor<1x16x?x128xbf16>
}
