// RUN: gated-attention-opt %s --gated-attention-tile-backward="query-block=16 key-block=16" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=avx512-bf16 register-rows=8 register-cols=16" \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s --gated-attention-tile-backward="query-block=16 key-block=16" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=fma register-rows=8 register-cols=16" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=FMA

// A bf16 backward on AVX512-BF16: of the key-block pass's five products
// only Sᵀ = K Qᵀ, whose operands are both bf16 inputs (exact products),
// multiplies bf16 pairs (vdpbf16ps): K's f32 tile rounded back to bf16
// (exact), Q as stored, 16 x 16 keys by rows over 16 pairs, in the loop
// over the whole query blocks and again in the one over the partial block.
// dPᵀ = V dYᵀ, dK, dV and dQ keep f32 operands on FMAs: pairing them would
// round dY, P or dS to bf16 (docs/Backward.md).
// CHECK-LABEL: func.func @bf16_with_lse
// CHECK-SAME:  target_features = #llvm.target_features<["+avx512f", "+avx512bf16"]>
// CHECK:       scf.forall {{.+}} -> (tensor<?x2x?x32xf32>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>)
// CHECK:         arith.truncf %{{.+}} : vector<1x32xf32> to vector<1x32xbf16>
// CHECK-COUNT-128: x86vector.avx512.dot
// CHECK-NOT:     {{x86vector.avx512.dot|to vector<.+xbf16>}}
// CHECK:         vector.fma
// CHECK-COUNT-128: x86vector.avx512.dot
// CHECK-NOT:     x86vector.avx512.dot
// CHECK:         vector.fma
// CHECK-NOT:     x86vector.avx512.dot
// CHECK:       return
// FMA-LABEL:   func.func @bf16_with_lse
// FMA-NOT:     x86vector
// FMA:         vector.fma
// FMA-NOT:     x86vector
// FMA:         return
func.func @bf16_with_lse(%q: tensor<1x2x?x32xbf16>, %k: tensor<1x1x?x32xbf16>, %v: tensor<1x1x?x32xbf16>, %o: tensor<1x2x?x32xbf16>, %do: tensor<1x2x?x32xbf16>, %g: tensor<1x2x?x32xbf16>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x2x?x32xbf16>) {
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) : (tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?xf32>) -> (tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x2x?x32xbf16>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x2x?x32xbf16>
}
