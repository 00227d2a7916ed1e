// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile-backward="query-block=16 key-block=8" -canonicalize -cse | FileCheck %s

// GQA 2, causal, no gate: marked scf.foralls on static tiles, none holding
// an Sq x Skv tensor. The preprocessing recomputes L (no lse operand): a key
// loop carrying (m, l), then m + log l. dK, dV and dQ in one pass, parallel
// over (Hkv, splits): split s takes key blocks s, s + splits, ... (at most 4
// splits, here min(4, key blocks)); per key block the group's 2 heads
// looped, each from the first row that sees the block (key0 - (Skv - Sq),
// at least 0), key-major (Sᵀ = K Qᵀ, 8 x 16, reading Q as stored: bf16
// pairs multiply exactly where the matrix units take them), dK and dV in
// f32 tile accumulators rounded once and staged at block / splits, and
// dQ += dS K (dSᵀ read down its columns) into the split's own f32 partial
// dQ; the whole query blocks read views of the rows, only the last, partial
// block a
// padded copy (the preprocessing too: a loop over the whole blocks, then
// one over the partial ones). Then dQ = the partials summed in split order,
// and dK, dV unstaged, each over the whole blocks and then the partial ones.
// CHECK:       #[[DSCOLS:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-LABEL: func.func @gqa_causal
// CHECK-NOT:     {{\?x\?x}}
// CHECK-DAG:     %[[SQ:.+]] = tensor.dim %arg0, %c2
// CHECK-DAG:     %[[SKV:.+]] = tensor.dim %arg1, %c2
// CHECK:         %[[OFFSET:.+]] = arith.subi %[[SKV]], %[[SQ]]
// CHECK:         %[[WHOLEROWS:.+]]:3 = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, %{{.+}}) shared_outs
// CHECK-NOT:       tensor.pad {{.+}} to tensor<16x16xbf16>
// CHECK:           tensor.extract_slice %arg4{{.+}} to tensor<16x16xbf16>
// CHECK:           scf.for %{{.+}} = %c0 to %{{.+}} step %c8 iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<16xf32>, tensor<16xf32>)
// CHECK:           math.log
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         %[[ROWS:.+]]:3 = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, %{{.+}}) shared_outs(%{{.+}} = %[[WHOLEROWS]]#0, %{{.+}} = %[[WHOLEROWS]]#1, %{{.+}} = %[[WHOLEROWS]]#2)
// CHECK:           tensor.pad
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         %[[BLOCKS:.+]] = arith.ceildivui %[[SKV]], %c8
// CHECK:         %[[FEW:.+]] = arith.minsi %[[BLOCKS]], %c4
// CHECK:         %[[SPLITS:.+]] = arith.maxsi %[[FEW]], %c1
// CHECK:         %[[KV:.+]]:3 = scf.forall (%{{.+}}, %{{.+}}, %[[SPLIT:.+]]) in (1, 2, %[[SPLITS]]) shared_outs({{.+}}) -> (tensor<?x4x?x32xf32>, tensor<?x2x?x32xbf16>, tensor<?x2x?x16xbf16>)
// CHECK:           %[[STRIDE:.+]] = arith.muli %[[SPLITS]], %c8
// CHECK:           %[[FIRSTKEY:.+]] = arith.muli %[[SPLIT]], %c8
// CHECK:           linalg.fill
// CHECK:           scf.for %[[KEY0:.+]] = %[[FIRSTKEY]] to %[[SKV]] step %[[STRIDE]] iter_args({{.+}}) -> (tensor<1x2x?x32xf32>, tensor<1x1x?x32xbf16>, tensor<1x1x?x16xbf16>)
// CHECK:             %[[FIRST:.+]] = arith.subi %[[KEY0]], %[[OFFSET]]
// CHECK:             %[[START:.+]] = arith.maxsi %[[FIRST]], %c0
// CHECK:             scf.for %{{.+}} = %c0 to %c2 step %c1 iter_args({{.+}}) -> (tensor<8x32xf32>, tensor<8x16xf32>, tensor<1x2x?x32xf32>)
// CHECK:               %[[WHOLE:.+]] = arith.addi %[[START]], %{{.+}}
// CHECK:               scf.for %{{.+}} = %[[START]] to %[[WHOLE]] step %c16 iter_args({{.+}}) -> (tensor<8x32xf32>, tensor<8x16xf32>, tensor<1x2x?x32xf32>)
// CHECK-NOT:               tensor.pad
// CHECK:                 %[[Q:.+]] = tensor.extract_slice %arg0{{.+}} to tensor<16x32xbf16>
// CHECK-NOT:               tensor.pad
// CHECK:                 tensor.extract_slice %[[ROWS]]#0{{.+}} to tensor<16x16xf32>
// CHECK:                 tensor.extract_slice %[[ROWS]]#1
// CHECK:                 tensor.extract_slice %[[ROWS]]#2
// CHECK:                 %[[ST:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}}, %[[Q]] : tensor<8x32xf32>, tensor<16x32xbf16>) outs(%{{.+}} : tensor<8x16xf32>)
// CHECK:                 %[[PT:.+]] = linalg.generic {{.+}} ins(%[[ST]], %{{.+}} : tensor<8x16xf32>, tensor<16xf32>)
// CHECK:                   math.exp
// CHECK:                 %[[DST:.+]] = linalg.generic {{.+}} ins(%[[PT]], %{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>)
// CHECK:                 %[[DQ:.+]] = linalg.generic {indexing_maps = [#[[DSCOLS]], #{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[DST]], %{{.+}} : tensor<8x16xf32>, tensor<8x32xf32>) outs(%{{.+}} : tensor<16x32xf32>)
// CHECK:                 linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[DST]], %{{.+}} : tensor<8x16xf32>, tensor<16x32xf32>) outs(%{{.+}} : tensor<8x32xf32>)
// CHECK:                 linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[PT]], %{{.+}} : tensor<8x16xf32>, tensor<16x16xf32>) outs(%{{.+}} : tensor<8x16xf32>)
// CHECK:                 tensor.insert_slice %[[DQ]] into %{{.+}}[0, %{{.+}}, %{{.+}}, 0] [1, 1, 16, 32]
// CHECK:               scf.for %{{.+}} = %[[WHOLE]] to %[[SQ]] step %c16
// CHECK:                 tensor.pad
// CHECK:             arith.truncf {{.+}} to bf16
// CHECK:           scf.forall.in_parallel
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         %[[DQ1:.+]] = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, %{{.+}}) shared_outs({{.+}}) -> (tensor<1x4x?x32xbf16>)
// CHECK:           scf.for %{{.+}} = %c0 to %[[SPLITS]] step %c1 iter_args(%{{.+}} = %{{.+}}) -> (tensor<16x32xf32>)
// CHECK:             tensor.extract_slice %[[KV]]#0{{.+}} to tensor<16x32xf32>
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         %[[DQ2:.+]] = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, %{{.+}}) shared_outs(%{{.+}} = %[[DQ1]]) -> (tensor<1x4x?x32xbf16>)
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         %[[DK1:.+]] = scf.forall {{.+}} -> (tensor<1x2x?x32xbf16>)
// CHECK:           arith.remui %{{.+}}, %[[SPLITS]]
// CHECK:           tensor.extract_slice %[[KV]]#1
// CHECK:         %[[DK2:.+]] = scf.forall {{.+}} shared_outs(%{{.+}} = %[[DK1]]) -> (tensor<1x2x?x32xbf16>)
// CHECK:         %[[DV1:.+]] = scf.forall {{.+}} -> (tensor<1x2x?x16xbf16>)
// CHECK:         %[[DV2:.+]] = scf.forall {{.+}} shared_outs(%{{.+}} = %[[DV1]]) -> (tensor<1x2x?x16xbf16>)
// CHECK:         return %[[DQ2]], %[[DK2]], %[[DV2]]
func.func @gqa_causal(%q: tensor<1x4x?x32xbf16>, %k: tensor<1x2x?x32xbf16>, %v: tensor<1x2x?x16xbf16>, %o: tensor<1x4x?x16xbf16>, %do: tensor<1x4x?x16xbf16>) -> (tensor<1x4x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x16xbf16>) {
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do {causal} : (tensor<1x4x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x16xbf16>, tensor<1x4x?x16xbf16>, tensor<1x4x?x16xbf16>) -> (tensor<1x4x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x16xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x4x?x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x16xbf16>
}

// -----

// Sigmoid gate with the forward's L given: the preprocessing runs no key
// loop and writes no L (dY, D and dG only); the key-block pass reads the
// given one. D = rowsum(dOut * out) and dG = dOut * out * sigmoid(-g) read
// the saved output, and the per-head gate's gradient is written by the
// preprocessing into the result (a tensor.empty, which bufferization puts
// in the caller's buffer), as are dQ, dK and dV by their passes. Without
// the causal mask every key block costs the same: split s takes the
// contiguous key blocks [s n / splits, (s + 1) n / splits) and writes their
// dK and dV rows where they lie in the results, with no staging and no pass
// to unstage them.
// CHECK-LABEL: func.func @sigmoid_with_lse
// CHECK:         %[[DG:.+]] = tensor.empty(%{{.+}}) : tensor<2x4x?x32xf32>
// CHECK:         scf.forall {{.+}} shared_outs(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %[[DG]]) -> (tensor<2x4x?x32xf32>, tensor<2x4x?xf32>, tensor<2x4x?x32xf32>)
// CHECK-NOT:       {{scf.for }}
// CHECK-NOT:       %arg6
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         %[[PRE:.+]]:3 = scf.forall
// CHECK-NOT:       %arg6
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         %[[BLOCKS:.+]] = arith.ceildivui %[[SKV:.+]], %c8
// CHECK:         %[[SPLITS:.+]] = arith.maxsi %{{.+}}, %c1
// CHECK:         %[[DK:.+]] = tensor.empty(%{{.+}}) : tensor<2x4x?x32xf32>
// CHECK:         %[[DV:.+]] = tensor.empty(%{{.+}}) : tensor<2x4x?x32xf32>
// CHECK:         %[[KV:.+]]:3 = scf.forall (%[[B:.+]], %[[H:.+]], %[[SPLIT:.+]]) in (2, 4, %[[SPLITS]]) shared_outs(%{{.+}} = %{{.+}}, %{{.+}} = %[[DK]], %{{.+}} = %[[DV]])
// CHECK:           %[[N0:.+]] = arith.muli %[[SPLIT]], %[[BLOCKS]]
// CHECK:           %[[B0:.+]] = arith.divui %[[N0]], %[[SPLITS]]
// CHECK:           %[[K0:.+]] = arith.muli %[[B0]], %c8
// CHECK:           %[[FIRSTKEY:.+]] = arith.minsi %[[K0]], %[[SKV]]
// CHECK:           %[[NEXT:.+]] = arith.addi %[[SPLIT]], %c1
// CHECK:           %[[N1:.+]] = arith.muli %[[NEXT]], %[[BLOCKS]]
// CHECK:           %[[B1:.+]] = arith.divui %[[N1]], %[[SPLITS]]
// CHECK:           %[[K1:.+]] = arith.muli %[[B1]], %c8
// CHECK:           %[[ENDKEY:.+]] = arith.minsi %[[K1]], %[[SKV]]
// CHECK:           %[[KEYS:.+]] = arith.subi %[[ENDKEY]], %[[FIRSTKEY]]
// CHECK:           scf.for %{{.+}} = %[[FIRSTKEY]] to %[[ENDKEY]] step %c8
// CHECK:             tensor.extract_slice %arg6
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[H]], %[[FIRSTKEY]], 0] [1, 1, %[[KEYS]], 32]
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[H]], %[[FIRSTKEY]], 0] [1, 1, %[[KEYS]], 32]
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         %[[DQ:.+]] = tensor.empty(%{{.+}}) : tensor<2x4x?x32xf32>
// CHECK:         scf.forall {{.+}} shared_outs(%{{.+}} = %[[DQ]])
// CHECK-COUNT-2: } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK-NOT:     scf.forall
// CHECK:         return %{{.+}}, %[[KV]]#1, %[[KV]]#2, %[[PRE]]#2
func.func @sigmoid_with_lse(%q: tensor<2x4x?x32xf32>, %k: tensor<2x4x?x32xf32>, %v: tensor<2x4x?x32xf32>, %o: tensor<2x4x?x32xf32>, %do: tensor<2x4x?x32xf32>, %g: tensor<2x4x?x32xf32>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>) {
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) : (tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?xf32>) -> (tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>
}

// -----

// SiLU with a shared headwise gate: the preprocessing recomputes L, then
// Y = P V in a second key loop (SiLU's act(0) = 0 loses Y in the saved
// output); the per-head gate gradient is summed over the heads after the
// loops and gets the gate's unit dims back.
// CHECK-LABEL: func.func @silu_shared_headwise
// CHECK:         scf.forall
// CHECK:           scf.for {{.+}} -> (tensor<16xf32>, tensor<16xf32>)
// CHECK:           scf.for {{.+}} -> (tensor<16x32xf32>)
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK-COUNT-2: } {mapping = [#gated_attention.tile<0>{{.*}}]}
// CHECK:         linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
// CHECK:         tensor.expand_shape {{.+}} {{\[\[}}0, 1], [2], [3]]
func.func @silu_shared_headwise(%q: tensor<1x4x?x32xf16>, %k: tensor<1x1x?x32xf16>, %v: tensor<1x1x?x32xf16>, %o: tensor<1x4x?x32xf16>, %do: tensor<1x4x?x32xf16>, %g: tensor<1x1x?x1xf16>) -> (tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x1xf16>) {
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g {gate = #gated_attention.gate<silu>} : (tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x4x?x32xf16>, tensor<1x4x?x32xf16>, tensor<1x1x?x1xf16>) -> (tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x1xf16>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x1xf16>
}
