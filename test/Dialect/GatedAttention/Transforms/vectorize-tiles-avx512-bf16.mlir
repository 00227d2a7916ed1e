// RUN: gated-attention-opt %s --gated-attention-tile="query-block=32 key-block=32" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=avx512-bf16 register-rows=8 register-cols=32" \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s --gated-attention-tile="query-block=32 key-block=32" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=fma register-rows=8 register-cols=32" \
// RUN:   | FileCheck %s --check-prefix=FMA

// bf16 products on AVX512-BF16: both contractions of the key loop become
// vdpbf16ps register tiles on bf16 pairs. S = Q Kᵀ multiplies the bf16
// queries themselves (split into pairs, never widened) and scales the
// scores after; P is rounded to bf16 before P V. The function is marked
// with the features the instruction needs.
// CHECK-LABEL: func.func @gqa_causal_bf16
// CHECK-SAME: target_features = #llvm.target_features<["+avx512f", "+avx512bf16"]>
// CHECK: scf.forall
// CHECK: scf.for
// The queries of the two stacked heads are multiplied unscaled, as they
// are: never a rounded copy of the scaled query tile (an error the error
// model does not have).
// CHECK-NOT: arith.truncf
// The bf16 query tile as pairs, the K block packed to (D/2) x keys x 2 by
// whole rows: blocks of 16 key rows read as 16 i32 pairs each, transposed
// in 64 shuffles, written as rows of (D/2) x 2. Element-wise packing (256
// extracts and inserts a block) doubled the compile time of bf16 functions.
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] output_shape [32, 32, 2] : tensor<32x64xbf16> into tensor<32x32x2xbf16>
// CHECK: scf.for {{.+}} -> (tensor<32x64xbf16>)
// CHECK-NEXT: scf.for {{.+}} -> (tensor<32x64xbf16>)
// CHECK-COUNT-16: vector.bitcast %{{.+}} : vector<32xbf16> to vector<16xi32>
// CHECK-NOT: vector.insert
// CHECK-NOT: vector.extract
// CHECK-COUNT-64: vector.shuffle %{{.+}}, %{{.+}} [{{.+}}] : vector<16xi32>, vector<16xi32>
// CHECK-NOT: vector.shuffle
// CHECK-NOT: vector.insert
// CHECK-NOT: vector.extract
// CHECK-COUNT-16: vector.transfer_write %{{.+}} : vector<32xbf16>, tensor<32x64xbf16>
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] output_shape [32, 32, 2] : tensor<32x64xbf16> into tensor<32x32x2xbf16>
// 8 x 32 register tiles of S: 8 rows x 2 accumulators of 16 lanes per pair,
// 16 pairs (32 reduction steps) per iteration of the depth loop, which
// carries the 16 accumulators in registers.
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c8
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c16 iter_args({{.+}}) -> ({{(vector<16xf32>, ){15}vector<16xf32>}})
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0], [1, 2]] : tensor<8x16x2xbf16> into tensor<8x32xbf16>
// CHECK-COUNT-256: x86vector.avx512.dot %{{.+}} : vector<32xbf16> -> vector<16xf32>
// CHECK-NOT: x86vector.avx512.dot
// CHECK: scf.yield
// The scores scaled once, row by row.
// CHECK: arith.mulf %{{.+}}, %{{.+}} : vector<1x32xf32>
// P rounded to bf16 in the loop computing it (its exp ends in arith.shli;
// both the f32 P, for the row sums, and the bf16 one written), not in a
// pass of its own, then P V on dot products as well; V packed by
// interleaving its rows 2p and 2p + 1, 16 pairs of 16 columns a block.
// The rounding is vcvtneps2bf16 on 16 values at a time (arith-expand would
// make arith.truncf an integer rounding of about ten instructions).
// CHECK: arith.shli
// CHECK-NOT: scf.for
// CHECK-COUNT-2: x86vector.avx512.cvt.packed.f32_to_bf16 %{{.+}} : vector<16xf32> -> vector<16xbf16>
// CHECK-NOT: arith.truncf
// CHECK: %[[PB:.+]] = vector.{{shape_cast|broadcast}} %{{.+}} : vector<32xbf16> to vector<1x32xbf16>
// CHECK-NEXT: vector.transfer_write %{{.+}} : vector<1x32xf32>, tensor<1x32xf32>
// CHECK-NEXT: vector.transfer_write %[[PB]], %{{.+}} : vector<1x32xbf16>, tensor<1x32xbf16>
// CHECK: scf.for {{.+}} -> (tensor<16x64xbf16>)
// CHECK-NOT: vector.insert
// CHECK-COUNT-16: vector.interleave %{{.+}}, %{{.+}} : vector<16xbf16> -> vector<32xbf16>
// CHECK-NOT: vector.insert
// CHECK: scf.yield %{{.+}} : tensor<16x64xbf16>
// CHECK: x86vector.avx512.dot
// CHECK-NOT: vector.fma
// CHECK: scf.yield

// f32 attention stays on FMAs.
// CHECK-LABEL: func.func @f32_stays_on_fma
// CHECK-NOT: target_features
// CHECK-NOT: x86vector
// CHECK: vector.fma
// CHECK-NOT: x86vector
// CHECK: return

// A value head dim whose register tiles are not all a multiple of 4
// columns wide (34 = 32 + a remainder of 2) keeps P V on FMAs: the
// 2-column tile failed to vectorize as a dot product (a bf16 op with
// Dv = 2 did not compile). S = Q Kᵀ (32 keys) stays on vdpbf16ps.
// CHECK-LABEL: func.func @narrow_value_tile
// CHECK-COUNT-256: x86vector.avx512.dot
// CHECK-NOT: x86vector.avx512.dot
// CHECK: vector.fma {{.+}} : vector<32xf32>
// CHECK: vector.fma {{.+}} : vector<2xf32>
// CHECK-NOT: x86vector
// CHECK: return

// FMA-LABEL: func.func @gqa_causal_bf16
// FMA-NOT: x86vector
// FMA-NOT: target_features
// FMA: vector.fma
// FMA-NOT: x86vector
// FMA-LABEL: func.func @f32_stays_on_fma
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

func.func @narrow_value_tile(%q: tensor<1x1x32x32xbf16>, %k: tensor<1x1x32x32xbf16>,
                             %v: tensor<1x1x32x34xbf16>) -> tensor<1x1x32x34xbf16> {
  %o = gated_attention.attention %q, %k, %v
      : (tensor<1x1x32x32xbf16>, tensor<1x1x32x32xbf16>, tensor<1x1x32x34xbf16>)
      -> tensor<1x1x32x34xbf16>
  return %o : tensor<1x1x32x34xbf16>
}
