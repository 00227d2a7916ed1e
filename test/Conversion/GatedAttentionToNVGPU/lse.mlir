// RUN: gated-attention-opt %s -split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s -split-input-file \
// RUN:   --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=WGMMA

// The op's log-sum-exp on the tensor cores: the kernel of an op that asks
// for it takes an f32 [B, Hq, Sq] buffer after the output and stores
// L = ln 2 * m + log(l) of each row from the first lane of its quad; the
// host returns the buffer as the second result.
// CHECK-LABEL: func.func @with_lse
// CHECK:         %[[LSE:.+]] = memref.alloc(%{{.+}}) : memref<1x4x?xf32>
// CHECK:         %[[FLAT:.+]] = memref.collapse_shape %[[LSE]] {{.+}} into memref<?xf32>
// CHECK:         gpu.launch_func @[[K:gated_attention_bf16_h4x2_d64_causal_lse]]::@[[K]]
// CHECK-SAME:      %{{.+}} : memref<?xbf16>, %[[FLAT]] : memref<?xf32>, %{{.+}} : index
// CHECK:         %[[T:.+]] = bufferization.to_tensor %[[LSE]]
// CHECK:         return %{{.+}}, %[[T]]
// CHECK:       gpu.func @gated_attention_bf16_h4x2_d64_causal_lse(
// CHECK-SAME:    %{{.+}}: memref<?xbf16>, %[[ARG:[^:]+]]: memref<?xf32>, %{{.+}}: index
// CHECK:         %[[LN2:.+]] = arith.constant 0.693147182 : f32
// CHECK:         arith.mulf %{{.+}}, %[[LN2]] : f32
// CHECK:         math.log
// CHECK:         scf.if
// CHECK-NEXT:      memref.store %{{.+}}, %[[ARG]][%{{.+}}] : memref<?xf32>
// WGMMA-LABEL: func.func @with_lse
// WGMMA:         gpu.launch_func @[[K:gated_attention_bf16_h4x2_d64_causal_sm90a_lse]]::@[[K]]
// WGMMA:       gpu.func @gated_attention_bf16_h4x2_d64_causal_sm90a_lse(
// WGMMA-SAME:    %{{.+}}: memref<?xbf16>, %[[ARG:[^:]+]]: memref<?xf32>, %{{.+}}: index
// WGMMA:         math.log
// WGMMA:         memref.store %{{.+}}, %[[ARG]][%{{.+}}] : memref<?xf32>
func.func @with_lse(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %g: tensor<1x4x?x64xbf16>) -> (tensor<1x4x?x64xbf16>, tensor<1x4x?xf32>) {
  %r:2 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x4x?x64xbf16>) -> (tensor<1x4x?x64xbf16>, tensor<1x4x?xf32>)
  return %r#0, %r#1 : tensor<1x4x?x64xbf16>, tensor<1x4x?xf32>
}

// -----

// The same op without the log-sum-exp: its kernel has no f32 argument and
// computes no logarithm.
// CHECK-LABEL: func.func @without_lse
// CHECK:         gpu.launch_func @[[K:gated_attention_bf16_h4x2_d64_causal]]::@[[K]]
// CHECK-NOT:       memref<?xf32>
// CHECK-SAME:      %{{.+}} : index
// CHECK:       gpu.func @gated_attention_bf16_h4x2_d64_causal(
// CHECK-NOT:     memref<?xf32>
// CHECK-SAME:    %{{.+}}: memref<?xbf16>, %{{.+}}: index
// CHECK-NOT:     math.log
// CHECK:         gpu.return
// WGMMA-LABEL: func.func @without_lse
// WGMMA:       gpu.func @gated_attention_bf16_h4x2_d64_causal_sm90a(
// WGMMA-NOT:     math.log
// WGMMA:         gpu.return
func.func @without_lse(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %g: tensor<1x4x?x64xbf16>) -> tensor<1x4x?x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x4x?x64xbf16>) -> tensor<1x4x?x64xbf16>
  return %r : tensor<1x4x?x64xbf16>
}

// -----

// A decode step: split-KV's split kernel writes its partials' log2 LSEs
// as without the result (no lse argument), the merge combines them and
// writes L from one thread; the direct kernel writes it itself.
// CHECK-LABEL: func.func @decode_lse
// CHECK:         %[[LSE:.+]] = memref.alloc() : memref<2x16x1xf32>
// CHECK:         %[[FLAT:.+]] = memref.cast %{{.+}} : memref<32xf32> to memref<?xf32>
// CHECK:         scf.if
// CHECK:           gpu.launch_func @[[SPLIT:gated_attention_bf16_h16x2_d128_split]]::@[[SPLIT]]
// CHECK:           gpu.launch_func @[[MERGE:gated_attention_bf16_h16x2_d128_merge_lse]]::@[[MERGE]]
// CHECK-SAME:        args(%{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %[[FLAT]] : memref<?xf32>,
// CHECK:         } else {
// CHECK:           gpu.launch_func @[[DIRECT:gated_attention_bf16_h16x2_d128_lse]]::@[[DIRECT]]
// CHECK-SAME:        %{{.+}} : memref<?xbf16>, %[[FLAT]] : memref<?xf32>, %{{.+}} : index
// CHECK:       gpu.func @gated_attention_bf16_h16x2_d128_lse(
// CHECK:       gpu.func @gated_attention_bf16_h16x2_d128_split(
// CHECK-NOT:     math.log %
// CHECK:       gpu.func @gated_attention_bf16_h16x2_d128_merge_lse(
// CHECK-SAME:    %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %[[ARG:[^:]+]]: memref<?xf32>
// CHECK:         math.log %
// CHECK:         memref.store %{{.+}}, %[[ARG]][%{{.+}}] : memref<?xf32>
func.func @decode_lse(%q: tensor<2x16x1x128xbf16>, %k: tensor<2x2x?x128xbf16>, %v: tensor<2x2x?x128xbf16>, %g: tensor<2x16x1x128xbf16>) -> (tensor<2x16x1x128xbf16>, tensor<2x16x1xf32>) {
  %r:2 = gated_attention.attention %q, %k, %v, %g
      : (tensor<2x16x1x128xbf16>, tensor<2x2x?x128xbf16>, tensor<2x2x?x128xbf16>, tensor<2x16x1x128xbf16>) -> (tensor<2x16x1x128xbf16>, tensor<2x16x1xf32>)
  return %r#0, %r#1 : tensor<2x16x1x128xbf16>, tensor<2x16x1xf32>
}
