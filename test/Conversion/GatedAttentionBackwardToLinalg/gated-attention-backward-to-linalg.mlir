// RUN: gated-attention-opt %s -split-input-file --convert-gated-attention-backward-to-linalg -canonicalize | FileCheck %s

// Sigmoid, mul, per-head elementwise gate, GQA 2: everything the gradient
// needs comes from the saved output. D = rowsum(dOut * out) reads the
// output and its gradient; the ungated output is not recomputed (the value
// is read once, by dP = dY V^T); dK and dV reduce over (r, i); dQ and dG
// merge the group's heads back.
// CHECK-DAG: #[[ID5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[ROW5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @sigmoid_from_output
// CHECK-SAME: (%[[Q:[^:]+]]: {{[^,]+}}, %[[K:[^:]+]]: {{[^,]+}}, %[[V:[^:]+]]: {{[^,]+}}, %[[O:[^:]+]]: {{[^,]+}}, %[[DO:[^:]+]]: {{[^,]+}}, %[[G:[^:]+]]:
// CHECK-DAG: %[[O5:.+]] = tensor.expand_shape %[[O]] {{\[\[}}0], [1, 2], [3], [4]]
// CHECK-DAG: %[[DO5:.+]] = tensor.expand_shape %[[DO]] {{\[\[}}0], [1, 2], [3], [4]]
// CHECK: math.exp
// CHECK: %[[DELTA:.+]] = linalg.generic {indexing_maps = [#[[ID5]], #[[ID5]], #[[ROW5]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[DO5]], %[[O5]] :
// CHECK: %[[DP:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[V]] :
// CHECK-NOT: ins(%{{.+}}, %[[V]] :
// CHECK: %[[DS:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[DP]], %[[DELTA]] :
// CHECK: arith.subf
// CHECK: %[[DQ5:.+]] = linalg.generic {{.+}} ins(%[[DS]], %[[K]] :
// CHECK: %[[DQ:.+]] = tensor.collapse_shape %[[DQ5]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x2x?x16xf32> into tensor<1x4x?x16xf32>
// CHECK: %[[DK:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[DS]], %{{.+}} : {{.+}}) outs(%{{.+}} : tensor<1x2x?x16xf32>)
// CHECK: %[[DV:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.+}}, %{{.+}} : {{.+}}) outs(%{{.+}} : tensor<1x2x?x8xf32>)
// CHECK: %[[DG5:.+]] = linalg.generic {{.+}} ins(%[[DO5]], %{{.+}}, %[[O5]] :
// CHECK: %[[DG:.+]] = tensor.collapse_shape %[[DG5]]
// CHECK: return %[[DQ]], %[[DK]], %[[DV]], %[[DG]]
func.func @sigmoid_from_output(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>, %o: tensor<1x4x?x8xf32>, %do: tensor<1x4x?x8xf32>, %g: tensor<1x4x?x8xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>) {
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g {causal} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>
}

// -----

// SiLU loses Y where act(G) = 0: the ungated output is recomputed as P V
// and the gate's gradient reads it. A shared headwise gate's gradient sums
// over the heads (kh, r) and the channel, then gets its unit dims back.
// CHECK-LABEL: func.func @silu_recomputes_shared_headwise
// CHECK-SAME: (%{{[^:]+}}: {{[^,]+}}, %{{[^:]+}}: {{[^,]+}}, %[[V:[^:]+]]: {{[^,]+}}, %{{[^:]+}}: {{[^,]+}}, %{{[^:]+}}: {{[^,]+}}, %[[G:[^:]+]]:
// CHECK: %[[Y:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[V]] : tensor<2x2x2x?x?xf32>, tensor<2x2x?x8xf32>) outs(%{{.+}} : tensor<2x2x2x?x8xf32>)
// CHECK: %[[DG:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "reduction", "parallel", "reduction"]} ins(%{{.+}}, %[[G]], %[[Y]] : {{.+}}) outs(%{{.+}} : tensor<2x?xf32>)
// CHECK: %[[DG4:.+]] = tensor.expand_shape %[[DG]] {{\[\[}}0, 1], [2, 3]] {{.+}} : tensor<2x?xf32> into tensor<2x1x?x1xf32>
// CHECK: return %[[DG4]]
func.func @silu_recomputes_shared_headwise(%q: tensor<2x4x?x16xf32>, %k: tensor<2x2x?x16xf32>, %v: tensor<2x2x?x8xf32>, %o: tensor<2x4x?x8xf32>, %do: tensor<2x4x?x8xf32>, %g: tensor<2x1x?x1xf32>) -> tensor<2x1x?x1xf32> {
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g {gate = #gated_attention.gate<silu>} : (tensor<2x4x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?x8xf32>, tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>, tensor<2x1x?x1xf32>) -> (tensor<2x4x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?x8xf32>, tensor<2x1x?x1xf32>)
  return %0#3 : tensor<2x1x?x1xf32>
}

// -----

// bf16 without a gate: f32 accumulation, each gradient rounded once.
// CHECK-LABEL: func.func @bf16_no_gate
// CHECK-COUNT-3: arith.truncf %{{.+}} : f32 to bf16
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @bf16_no_gate(%q: tensor<1x2x5x16xbf16>, %k: tensor<1x2x7x16xbf16>, %v: tensor<1x2x7x8xbf16>, %o: tensor<1x2x5x8xbf16>, %do: tensor<1x2x5x8xbf16>) -> (tensor<1x2x5x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>) {
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do : (tensor<1x2x5x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>, tensor<1x2x5x8xbf16>, tensor<1x2x5x8xbf16>) -> (tensor<1x2x5x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x5x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>
}
