// RUN: gated-attention-opt %s --gated-attention-tile-backward="query-block=16 key-block=16 matrix-units=avx512-bf16" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=avx512-bf16 register-rows=8 register-cols=16" \
// RUN:   --canonicalize --cse > %t.pairs.mlir
// RUN: FileCheck %s --check-prefix=PAIRS --input-file=%t.pairs.mlir
// RUN: FileCheck %s --check-prefix=PAIRS-NOFMA --input-file=%t.pairs.mlir
// RUN: gated-attention-opt %s --gated-attention-tile-backward="query-block=16 key-block=16" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=avx512-bf16 register-rows=8 register-cols=16" \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s --gated-attention-tile-backward="query-block=16 key-block=16" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=fma register-rows=8 register-cols=16" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=FMA
// RUN: not gated-attention-opt %s --gated-attention-tile-backward="matrix-units=avx512" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// A bf16 backward with tile-backward's matrix-units=avx512-bf16 (what
// --gated-attention-to-llvm passes where the host has it): all five
// products of the key-block pass take bf16 operands and multiply bf16 pairs
// (vdpbf16ps), as torch's bf16 backward and the GPU kernels round them: dY
// stored in bf16 by the preprocessing (D is summed from the f32 dY), K and
// V as stored, dS rounded once for dQ and dK (transposed for dQ), P rounded
// for dV. Per query block, 16 x 16 keys by rows over 16 pairs for Sᵀ and
// dPᵀ (128 dots each) and 16 x 32 over 8 pairs for dQ, dK, dV (64 each),
// in the loop over the whole query blocks and again in the one over the
// partial block; no FMA product is left.
// PAIRS-LABEL: func.func @bf16_with_lse
// PAIRS-SAME:  target_features = #llvm.target_features<["+avx512f", "+avx512bf16"]>
// dY (bf16), D, the gate's gradient.
// PAIRS:       scf.forall {{.+}} -> (tensor<1x2x?x32xbf16>, tensor<1x2x?xf32>, tensor<1x2x?x32xbf16>)
// PAIRS:       scf.forall {{.+}} -> (tensor<?x2x?x32xf32>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>)
// Sᵀ = K Qᵀ; Pᵀ, rounded to bf16 in the loop computing it (its exp ends
// in arith.shli), not in a pass of its own; dPᵀ = V dYᵀ.
// PAIRS-COUNT-128: x86vector.avx512.dot
// PAIRS:       arith.shli
// PAIRS-NOT:   scf.for
// PAIRS:       x86vector.avx512.cvt.packed.f32_to_bf16 %{{.+}} : vector<16xf32> -> vector<16xbf16>
// PAIRS-COUNT-128: x86vector.avx512.dot
// dSᵀ rounded to bf16 where it is computed (vcvtneps2bf16), transposed; dQ += dS K,
// dK += dSᵀ Q, dV += Pᵀ dY.
// PAIRS:       x86vector.avx512.cvt.packed.f32_to_bf16 %{{.+}} : vector<16xf32> -> vector<16xbf16>
// PAIRS:       vector.shape_cast %{{.+}} : vector<16x1xbf16> to vector<1x16xbf16>
// PAIRS-COUNT-192: x86vector.avx512.dot
// The partial query block.
// PAIRS-COUNT-128: x86vector.avx512.dot
// PAIRS:       arith.shli
// PAIRS-NOT:   scf.for
// PAIRS:       x86vector.avx512.cvt.packed.f32_to_bf16 %{{.+}} : vector<16xf32> -> vector<16xbf16>
// PAIRS-COUNT-128: x86vector.avx512.dot
// PAIRS:       x86vector.avx512.cvt.packed.f32_to_bf16 %{{.+}} : vector<16xf32> -> vector<16xbf16>
// PAIRS-COUNT-192: x86vector.avx512.dot
// PAIRS-NOT:   x86vector.avx512.dot
// PAIRS:       return
// PAIRS-NOFMA-LABEL: func.func @bf16_with_lse
// PAIRS-NOFMA-NOT: vector.fma
// PAIRS-NOFMA:     return
// f32 and f16 ops have no pairs: f32 operands, FMAs, no features.
// PAIRS-LABEL: func.func @f16_with_lse
// PAIRS-NOT:   target_features
// PAIRS-NOT:   x86vector
// PAIRS:       vector.fma
// PAIRS-NOT:   x86vector
// PAIRS:       return

// The same op with tile-backward's default matrix-units=fma (the f32
// operands' error model): of the key-block pass's five products only
// Sᵀ = K Qᵀ, whose operands are both bf16 inputs (exact products),
// multiplies bf16 pairs on AVX512-BF16: K's bf16 values under its f32
// tile (an extension, not rounded back) and Q as stored, 16 x 16 keys by
// rows over 16 pairs, in the loop over the whole query blocks and again in
// the one over the partial block.
// dPᵀ = V dYᵀ, dK, dV and dQ keep f32 operands on FMAs: pairing them would
// round dY, P or dS to bf16 (docs/Backward.md).
// CHECK-LABEL: func.func @bf16_with_lse
// CHECK-SAME:  target_features = #llvm.target_features<["+avx512f", "+avx512bf16"]>
// CHECK:       scf.forall {{.+}} -> (tensor<?x2x?x32xf32>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>)
// CHECK-NOT:     arith.truncf
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
// An unknown matrix-units is a diagnostic, not a crash.
// BAD: option 'matrix-units': unknown value 'avx512'; expected fma, avx512-bf16 or amx
func.func @bf16_with_lse(%q: tensor<1x2x?x32xbf16>, %k: tensor<1x1x?x32xbf16>, %v: tensor<1x1x?x32xbf16>, %o: tensor<1x2x?x32xbf16>, %do: tensor<1x2x?x32xbf16>, %g: tensor<1x2x?x32xbf16>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x2x?x32xbf16>) {
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) : (tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?xf32>) -> (tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x2x?x32xbf16>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x2x?x32xbf16>
}

func.func @f16_with_lse(%q: tensor<1x2x?x32xf16>, %k: tensor<1x1x?x32xf16>, %v: tensor<1x1x?x32xf16>, %o: tensor<1x2x?x32xf16>, %do: tensor<1x2x?x32xf16>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>) {
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse) : (tensor<1x2x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?xf32>) -> (tensor<1x2x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>
}
