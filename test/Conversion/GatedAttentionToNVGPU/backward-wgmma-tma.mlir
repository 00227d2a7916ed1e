// RUN: gated-attention-opt %s \
// RUN:   --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   --canonicalize --cse | FileCheck %s

// The sm_90a backward kernels read K and V through TMA maps (128-byte
// swizzle, zero fill past Skv): the host makes a map of each for the dK/dV
// kernel with boxes of its 64 resident keys, and for the dQ kernel with
// boxes of its key blocks (32 keys at D = 256). Q and dY stay cp.async row
// copies (the dK/dV kernel's packed GQA rows interleave heads).
// CHECK-LABEL: func.func @wide
// CHECK:         gpu.launch_func @{{.+}}_bwd_pre::
// CHECK:         %[[KVKP:.+]] = scf.if %{{.+}} -> (!llvm.ptr) {
// CHECK:         %[[KVK:.+]] = nvgpu.tma.create.descriptor %[[KBUF:.+]] box[%c1, %c64, %c64] : memref<*xbf16> -> <tensor = memref<1x64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
// CHECK:         %[[KVKC:.+]] = builtin.unrealized_conversion_cast %[[KVK]]
// CHECK:         scf.yield %[[KVKC]]
// CHECK:         %[[KVVP:.+]] = scf.if %{{.+}} -> (!llvm.ptr) {
// CHECK:         %[[KVV:.+]] = nvgpu.tma.create.descriptor %[[VBUF:.+]] box[%c1, %c64, %c64]
// CHECK:         %[[KVVC:.+]] = builtin.unrealized_conversion_cast %[[KVV]]
// CHECK:         scf.yield %[[KVVC]]
// CHECK:         gpu.launch_func @[[KV:.+_bwd_kv_sm90a]]::@[[KV]] {{.+}} args(%{{.+}} : memref<?xbf16>, %[[KVKP]] : !llvm.ptr, %[[KVVP]] : !llvm.ptr, %{{.+}} : memref<?xbf16>,
// CHECK:         %[[QKP:.+]] = scf.if %{{.+}} -> (!llvm.ptr) {
// CHECK:         %[[QK:.+]] = nvgpu.tma.create.descriptor %[[KBUF]] box[%c1, %c32, %c64] : memref<*xbf16> -> <tensor = memref<1x32x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
// CHECK:         %[[QKC:.+]] = builtin.unrealized_conversion_cast %[[QK]]
// CHECK:         scf.yield %[[QKC]]
// CHECK:         %[[QVP:.+]] = scf.if %{{.+}} -> (!llvm.ptr) {
// CHECK:         %[[QV:.+]] = nvgpu.tma.create.descriptor %[[VBUF]] box[%c1, %c32, %c64]
// CHECK:         %[[QVC:.+]] = builtin.unrealized_conversion_cast %[[QV]]
// CHECK:         scf.yield %[[QVC]]
// CHECK:         gpu.launch_func @[[Q:.+_bwd_q_sm90a]]::@[[Q]] {{.+}} args(%{{.+}} : memref<?xbf16>, %[[QKP]] : !llvm.ptr, %[[QVP]] : !llvm.ptr, %{{.+}} : memref<?xbf16>,

// dK/dV: the resident K and V land by TMA, issued by the thread that
// initializes the barriers, before the CTA barrier and the roles' split:
// one arrival with their 64 x (256 + 256) x 2 bytes on a barrier of one
// arrival, a box per 64-column atom, and no row copy of them; the
// consumers wait for them without a proxy fence (TMA writes through the
// async proxy), and for each block of streamed rows with one.
// CHECK-LABEL: gpu.func @{{.+}}_bwd_kv_sm90a(
// CHECK-SAME:    %{{.+}}: memref<?xbf16>, %[[K:.+]]: !llvm.ptr, %[[V:.+]]: !llvm.ptr,
// CHECK:         nvvm.mbarrier.init %{{.+}}, %c256_i32
// CHECK:         nvvm.mbarrier.init %[[RESIDENT:.+]], %c1_i32
// CHECK-NEXT:    nvvm.fence.mbarrier.init
// CHECK-NOT:     nvvm.cp.async.shared.global
// CHECK:         nvvm.mbarrier.arrive.expect_tx %[[RESIDENT]], %c65536_i32
// CHECK-NOT:     nvvm.cp.async.shared.global
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[K]], %[[RESIDENT]], box[
// CHECK-NOT:     nvvm.cp.async.shared.global
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[V]], %[[RESIDENT]], box[
// CHECK-NEXT:  }
// CHECK-NEXT:    gpu.barrier
// CHECK:         nvvm.setmaxregister decrease
// CHECK-NOT:     nvvm.cp.async.bulk.tensor
// CHECK:         scf.for
// CHECK:         nvvm.cp.async.shared.global
// CHECK:         nvvm.cp.async.mbarrier.arrive
// CHECK:         nvvm.setmaxregister increase
// CHECK-NOT:     nvvm.cp.async.bulk.tensor
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.+}}, %c0_i32
// CHECK-NOT:     nvvm.fence.proxy
// CHECK:         scf.for
// CHECK:         nvvm.mbarrier.try_wait.parity
// CHECK-NEXT:    nvvm.fence.proxy
// CHECK-NOT:     nvvm.cp.async.bulk.tensor
// CHECK:         gpu.return

// dQ: Q and dY by row copies (full barriers of one arrival, the resident
// one of 256); then the first producer thread streams each K and V block
// by TMA, with no row copy of them, and the consumers' per-block waits
// need no fence.
// CHECK-LABEL: gpu.func @{{.+}}_bwd_q_sm90a(
// CHECK-SAME:    %{{.+}}: memref<?xbf16>, %[[QK:.+]]: !llvm.ptr, %[[QV:.+]]: !llvm.ptr,
// CHECK:         nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK:         nvvm.mbarrier.init %{{.+}}, %c256_i32
// CHECK:         nvvm.setmaxregister decrease
// CHECK-COUNT-2: nvvm.cp.async.mbarrier.arrive
// CHECK-NOT:     nvvm.cp.async.shared.global
// CHECK:         nvvm.mbarrier.arrive.expect_tx %[[FULL:.+]], %c32768_i32
// CHECK-NOT:     nvvm.cp.async.shared.global
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[QK]], %[[FULL]], box[
// CHECK-NOT:     nvvm.cp.async.shared.global
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[QV]], %[[FULL]], box[
// CHECK-NOT:     nvvm.cp.async.shared.global
// CHECK:         nvvm.setmaxregister increase
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.+}}, %c0_i32
// CHECK-NEXT:    nvvm.fence.proxy
// CHECK:         scf.for
// CHECK:         nvvm.mbarrier.try_wait.parity
// CHECK-NOT:     nvvm.fence.proxy
// CHECK-NOT:     nvvm.cp.async
// CHECK:         gpu.return
func.func @wide(%q: tensor<?x4x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>, %o: tensor<?x4x?x256xbf16>, %do: tensor<?x4x?x256xbf16>, %g: tensor<?x4x?x256xbf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x4x?x256xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?xf32>)
      -> (tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x4x?x256xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x4x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x4x?x256xbf16>
}
