// A backward op of static shapes (B, Sq and Skv in its types, as a frontend
// or a hand-written function gives them) tiles like a dynamic one. Two
// defects are pinned here: the tiled form built slices of dynamic type from
// static sizes, which the verifier rejected ("expected type to be
// 'tensor<1x2x40x64xf32>'"); and its foralls lost the discardable
// attribute that marked them for vectorization, to canonicalization (a
// tensor.cast folded into a forall's outputs rebuilds it without them; a
// forall of one iteration is inlined), so the key-block pass ran scalar,
// 20-60x slower than the same op with dynamic sizes. The tile grids are
// marked by their mapping now (#gated_attention.tile), which those
// canonicalizations keep, and the scratch tensors get static types.
// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile-backward -canonicalize -cse | FileCheck %s
// RUN: gated-attention-opt %s -split-input-file --gated-attention-to-llvm | FileCheck %s --check-prefix=LLVM

// Every forall of the tiled form keeps its mapping (none is folded away),
// and no cast is left for canonicalization to fold into one.
// CHECK-LABEL: func.func @static_causal_lse
// CHECK-NOT: tensor.cast
// CHECK-COUNT-9: } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK-NOT: scf.forall
// CHECK-NOT: tensor.cast
// CHECK: return
func.func @static_causal_lse(%q: tensor<1x4x40x64xf32>, %k: tensor<1x2x70x64xf32>,
    %v: tensor<1x2x70x64xf32>, %o: tensor<1x4x40x64xf32>, %do: tensor<1x4x40x64xf32>,
    %g: tensor<1x4x40x64xf32>, %lse: tensor<1x4x40xf32>)
    -> (tensor<1x4x40x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x4x40x64xf32>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<1x4x40x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x4x40x64xf32>, tensor<1x4x40x64xf32>, tensor<1x4x40x64xf32>, tensor<1x4x40xf32>)
      -> (tensor<1x4x40x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x4x40x64xf32>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x4x40x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x4x40x64xf32>
}

// Through the CPU pipeline its products are vector FMAs (the register
// tiles), not a scalar multiply-add per element.
// LLVM-LABEL: llvm.func @static_causal_lse
// LLVM: llvm.intr.fmuladd{{.*}}vector<

// -----

// Without a saved L (the backward computes it), non-causal, whole blocks:
// whole blocks. Non-causal, the key-block pass writes dK and dV into the
// results (no staging, no foralls to unstage them): five foralls.
// CHECK-LABEL: func.func @static_recomputed_lse
// CHECK-NOT: tensor.cast
// CHECK-COUNT-5: } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK-NOT: scf.forall
// CHECK-NOT: tensor.cast
// CHECK: return
func.func @static_recomputed_lse(%q: tensor<1x4x128x64xf32>, %k: tensor<1x2x128x64xf32>,
    %v: tensor<1x2x128x64xf32>, %o: tensor<1x4x128x64xf32>, %do: tensor<1x4x128x64xf32>,
    %g: tensor<1x4x128x64xf32>)
    -> (tensor<1x4x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x4x128x64xf32>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g
      : (tensor<1x4x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>)
      -> (tensor<1x4x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x4x128x64xf32>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x4x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x4x128x64xf32>
}

// -----

// B 1, one K/V head and one key block: the key-block pass is a forall of a
// single iteration, which canonicalization inlined when unmapped.
// CHECK-LABEL: func.func @static_one_tile
// CHECK-COUNT-9: } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK-NOT: scf.forall
// CHECK: return
func.func @static_one_tile(%q: tensor<1x8x33x128xf16>, %k: tensor<1x1x33x128xf16>,
    %v: tensor<1x1x33x64xf16>, %o: tensor<1x8x33x64xf16>, %do: tensor<1x8x33x64xf16>,
    %g: tensor<1x8x33x64xf16>)
    -> (tensor<1x8x33x128xf16>, tensor<1x1x33x128xf16>, tensor<1x1x33x64xf16>, tensor<1x8x33x64xf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g {causal}
      : (tensor<1x8x33x128xf16>, tensor<1x1x33x128xf16>, tensor<1x1x33x64xf16>, tensor<1x8x33x64xf16>, tensor<1x8x33x64xf16>, tensor<1x8x33x64xf16>)
      -> (tensor<1x8x33x128xf16>, tensor<1x1x33x128xf16>, tensor<1x1x33x64xf16>, tensor<1x8x33x64xf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x8x33x128xf16>, tensor<1x1x33x128xf16>, tensor<1x1x33x64xf16>, tensor<1x8x33x64xf16>
}
