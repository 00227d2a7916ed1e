// RUN: gated-attention-opt %s --gated-attention-tile="query-block=32 key-block=32" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=amx" \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s --gated-attention-tile="query-block=64 key-block=64" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=amx" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=BLOCK64

// bf16 products on AMX: both contractions of the key loop become pair
// contractions (the VNNI layout) left as linalg.generic on tensors for
// gated-attention-amx-tiles, which multiplies them after bufferization. S =
// Q Kᵀ multiplies the bf16 queries themselves; P is rounded to bf16 before
// P V; the K and V blocks are packed into pairs once per block. Nothing of
// the products is left to FMAs, and the function is marked with the AMX
// features.
// CHECK-LABEL: func.func @gqa_causal_bf16
// CHECK-SAME: target_features = #llvm.target_features<["+avx512f", "+avx512bf16", "+amx-tile", "+amx-bf16"]>
// CHECK-NOT: vector.fma
// CHECK: scf.forall
// CHECK: scf.for
// S = Q Kᵀ starts from zero: its init is left unfilled and the contraction
// marked, so that gated-attention-amx-tiles starts its accumulator tiles
// from tilezero (no zero-filled buffer); P V, onto the acc chunk, is not.
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] output_shape [32, 32, 2] : tensor<32x64xbf16> into tensor<32x32x2xbf16>
// CHECK: %[[SINIT:.+]] = tensor.empty() : tensor<32x32xf32>
// CHECK: scf.for {{.+}} -> (tensor<32x64xbf16>)
// CHECK-COUNT-64: vector.shuffle
// CHECK-NOT: vector.fma
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<32x32x2xbf16>, tensor<32x32x2xbf16>) outs(%[[SINIT]] : tensor<32x32xf32>) attrs = {gated_attention.amx_tiles, gated_attention.amx_zero_start}
// CHECK-NOT: vector.fma
// P rounded to bf16 by vcvtneps2bf16, 16 values at a time.
// CHECK-COUNT-2: x86vector.avx512.cvt.packed.f32_to_bf16 %{{.+}} : vector<16xf32> -> vector<16xbf16>
// CHECK: scf.for {{.+}} -> (tensor<16x64xbf16>)
// CHECK-COUNT-16: vector.interleave
// CHECK-NOT: vector.fma
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<32x16x2xbf16>, tensor<16x32x2xbf16>) outs(%{{.+}} : tensor<32x32xf32>) attrs = {gated_attention.amx_tiles} {
// CHECK-NOT: vector.fma
// CHECK-NOT: x86vector.avx512.dot
// CHECK-LABEL: func.func @f32_stays_on_fma
// CHECK-NOT: target_features
// CHECK-NOT: reduction", "reduction"
// CHECK: vector.fma
// CHECK-NOT: reduction", "reduction"
// CHECK: return

// A contraction whose tiles are not whole AMX tiles (16 rows x 16 columns x
// 16 pairs) takes AVX512-BF16's dots: here S = Q Kᵀ over D = 48 (24
// pairs), while P V stays on AMX. (AMX tiles of a second shape in one
// function made LLVM's tile register allocation spill every tile.)
// CHECK-LABEL: func.func @partial_tiles
// CHECK-SAME: target_features = #llvm.target_features<["+avx512f", "+avx512bf16", "+amx-tile", "+amx-bf16"]>
// CHECK: x86vector.avx512.dot
// CHECK-NOT: gated_attention.amx_zero_start
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<32x16x2xbf16>, tensor<16x32x2xbf16>) outs(%{{.+}} : tensor<32x32xf32>) attrs = {gated_attention.amx_tiles}
// CHECK-NOT: gated_attention.amx
// CHECK: return

// Blocks larger than 32: 32 x 32 output tiles (2 x 2 AMX accumulators),
// the whole reduction in each.
// BLOCK64-LABEL: func.func @gqa_causal_bf16
// BLOCK64: scf.for %{{.+}} = %c0 to %c64 step %c32
// BLOCK64-NEXT: scf.for %{{.+}} = %c0 to %c64 step %c32
// BLOCK64: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<32x32x2xbf16>, tensor<32x32x2xbf16>) outs(%{{.+}} : tensor<32x32xf32>)
// BLOCK64: scf.for %{{.+}} = %c0 to %c64 step %c32
// BLOCK64-NOT: scf.for
// BLOCK64: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<32x32x2xbf16>, tensor<32x32x2xbf16>) outs(%{{.+}} : tensor<32x32xf32>)
// BLOCK64-LABEL: func.func @f32_stays_on_fma
func.func @gqa_causal_bf16(%q: tensor<1x4x64x64xbf16>, %k: tensor<1x2x64x64xbf16>,
                           %v: tensor<1x2x64x32xbf16>) -> tensor<1x4x64x32xbf16> {
  %o = gated_attention.attention %q, %k, %v {causal}
      : (tensor<1x4x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x32xbf16>)
      -> tensor<1x4x64x32xbf16>
  return %o : tensor<1x4x64x32xbf16>
}

func.func @f32_stays_on_fma(%q: tensor<1x2x32x32xf32>, %k: tensor<1x2x32x32xf32>,
                            %v: tensor<1x2x32x32xf32>) -> tensor<1x2x32x32xf32> {
  %o = gated_attention.attention %q, %k, %v
      : (tensor<1x2x32x32xf32>, tensor<1x2x32x32xf32>, tensor<1x2x32x32xf32>)
      -> tensor<1x2x32x32xf32>
  return %o : tensor<1x2x32x32xf32>
}

func.func @partial_tiles(%q: tensor<1x2x32x48xbf16>, %k: tensor<1x1x32x48xbf16>,
                         %v: tensor<1x1x32x32xbf16>) -> tensor<1x2x32x32xbf16> {
  %o = gated_attention.attention %q, %k, %v
      : (tensor<1x2x32x48xbf16>, tensor<1x1x32x48xbf16>, tensor<1x1x32x32xbf16>)
      -> tensor<1x2x32x32xbf16>
  return %o : tensor<1x2x32x32xbf16>
}
