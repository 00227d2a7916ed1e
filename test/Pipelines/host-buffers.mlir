// The PTX pipeline's host code frees the buffers it allocates once the
// launches that use them have completed: in a loop over layers, each step's
// buffer is freed after the next step's launch read it (one allocation per
// step, not one leaked per step).
// RUN: gated-attention-opt %s --split-input-file --gated-attention-to-ptx | FileCheck %s
// RUN: gated-attention-opt %s --split-input-file '--gated-attention-to-ptx=chip=sm_90a kernel=wgmma' \
// RUN:   | FileCheck %s --check-prefix=WGMMA
// Its launches are synchronous; asynchronous ones are rejected
// (async-launch.mlir).

// CHECK-LABEL: llvm.func @layers(
// CHECK: llvm.cond_br %{{.*}}, ^[[BODY:bb[0-9]+]], ^[[EXIT:bb[0-9]+]]
// CHECK: ^[[BODY]]:
// CHECK-NOT: {{^ *\^bb}}
// CHECK: llvm.call @malloc
// CHECK-NOT: {{^ *\^bb}}
// CHECK: gpu.launch_func @gated_attention_f16_h2x2_d64_nogate
// CHECK: llvm.cond_br %{{.*}}, ^[[FREE:bb[0-9]+]], ^
// CHECK: ^[[FREE]]:
// CHECK-NEXT: llvm.call @free
// CHECK: ^[[EXIT]]:
// CHECK-NOT: gpu.launch_func @gated_attention
// CHECK: llvm.return
func.func @layers(%q: tensor<1x2x16x64xf16>, %k: tensor<1x2x32x64xf16>,
                  %v0: tensor<1x2x32x64xf16>, %n: index) -> tensor<1x2x32x64xf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v0) -> tensor<1x2x32x64xf16> {
    %a = gated_attention.attention %acc, %k, %acc
        : (tensor<1x2x32x64xf16>, tensor<1x2x32x64xf16>, tensor<1x2x32x64xf16>) -> tensor<1x2x32x64xf16>
    scf.yield %a : tensor<1x2x32x64xf16>
  }
  return %r : tensor<1x2x32x64xf16>
}

// -----

// An intermediate of a graph (the gate's projection) is freed after the
// attention kernel read it; the result is returned, not freed.
// CHECK-LABEL: llvm.func @projected_gate(
// CHECK: %[[GATE:.+]] = llvm.call @malloc
// CHECK: gpu.launch_func @projected_gate_kernel
// CHECK: %[[OUT:.+]] = llvm.call @malloc
// CHECK: gpu.launch_func @gated_attention_f16_h2x2_d64::
// CHECK-NOT: llvm.call @free(%[[OUT]])
// CHECK: llvm.call @free(%[[GATE]])
// CHECK-NOT: llvm.call @free
// CHECK: llvm.return
func.func @projected_gate(%q: tensor<1x2x16x64xf16>, %k: tensor<1x2x32x64xf16>,
                          %v: tensor<1x2x32x64xf16>, %x: tensor<1x2x16x64xf16>)
    -> tensor<1x2x16x64xf16> {
  %e = tensor.empty() : tensor<1x2x16x64xf16>
  %g = linalg.negf ins(%x : tensor<1x2x16x64xf16>) outs(%e : tensor<1x2x16x64xf16>) -> tensor<1x2x16x64xf16>
  %a = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x2x16x64xf16>, tensor<1x2x32x64xf16>, tensor<1x2x32x64xf16>, tensor<1x2x16x64xf16>) -> tensor<1x2x16x64xf16>
  return %a : tensor<1x2x16x64xf16>
}


// -----

// The sm_90a kernel reads Q, K and V through TMA maps, which hold their
// buffers' addresses: a buffer made on the host (here Q, a projection) is
// freed after the launch that reads it through its map, not after the map
// is made.
// WGMMA-LABEL: llvm.func @projected_query(
// WGMMA: %[[Q:.+]] = llvm.call @malloc
// WGMMA: gpu.launch_func @projected_query_kernel
// WGMMA-NOT: llvm.call @free(%[[Q]])
// WGMMA: gpu.launch_func @gated_attention_f16_h2x2_d64_nogate_sm90a
// WGMMA: llvm.call @free(%[[Q]])
// WGMMA: llvm.return
func.func @projected_query(%x: tensor<1x2x128x64xf16>, %k: tensor<1x2x128x64xf16>,
                           %v: tensor<1x2x128x64xf16>) -> tensor<1x2x128x64xf16> {
  %e = tensor.empty() : tensor<1x2x128x64xf16>
  %q = linalg.negf ins(%x : tensor<1x2x128x64xf16>) outs(%e : tensor<1x2x128x64xf16>) -> tensor<1x2x128x64xf16>
  %a = gated_attention.attention %q, %k, %v
      : (tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>) -> tensor<1x2x128x64xf16>
  return %a : tensor<1x2x128x64xf16>
}
