// RUN: gated-attention-opt %s --convert-gated-attention-to-linalg --split-input-file > %t
// RUN: FileCheck %s --input-file=%t --implicit-check-not=gated_attention.attention
// RUN: FileCheck %s --input-file=%t --check-prefix=NOMASK

// GQA 8/2, causal, elementwise per-head sigmoid gate (the default), f32.
// K and V are read through indexing maps from the Hkv heads: never repeated.

// CHECK-DAG: #[[QMAP:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
// CHECK-DAG: #[[KMAP:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>
// CHECK-DAG: #[[SMAP:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[VMAP:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d5, d4)>
// CHECK-DAG: #[[ID5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @gqa_causal
// CHECK-SAME: (%[[Q:.+]]: tensor<1x8x64x32xf32>, %[[K:.+]]: tensor<1x2x80x32xf32>, %[[V:.+]]: tensor<1x2x80x16xf32>, %[[G:.+]]: tensor<1x8x64x16xf32>)
// CHECK: %[[Q5:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 64, 32]
// Scores: Q·Kᵀ reduced over d, accumulated in f32.
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[KMAP]], #[[SMAP]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[Q5]], %[[K]] : tensor<1x2x4x64x32xf32>, tensor<1x2x80x32xf32>)
// CHECK-SAME: outs(%{{.+}} : tensor<1x2x4x64x80xf32>)
// Scale and the bottom-right causal mask j <= i + (Skv - Sq).
// CHECK: %[[OFF:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK: %[[L:.+]] = linalg.generic {indexing_maps = [#[[ID5]], #[[ID5]]]
// CHECK-SAME: ins(%[[S]]
// CHECK: arith.mulf
// CHECK: %[[I:.+]] = linalg.index 3
// CHECK: %[[J:.+]] = linalg.index 4
// CHECK: %[[LAST:.+]] = arith.addi %[[I]], %[[OFF]]
// CHECK: %[[VIS:.+]] = arith.cmpi sle, %[[J]], %[[LAST]]
// CHECK: arith.select %[[VIS]]
// Row max.
// CHECK: %[[M:.+]] = linalg.generic {indexing_maps = [#[[ID5]], #[[ROW]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[L]]
// CHECK: arith.maximumf
// exp(s - m), with m replaced by 0 on rows without a visible key.
// CHECK: %[[P:.+]] = linalg.generic
// CHECK-SAME: ins(%[[L]], %[[M]]
// CHECK: arith.cmpf oeq
// CHECK: math.exp
// Row sum.
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[ID5]], #[[ROW]]]
// CHECK-SAME: ins(%[[P]]
// CHECK: arith.addf
// P·V.
// CHECK: %[[PV:.+]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[VMAP]], #[[SMAP]]]
// CHECK-SAME: ins(%[[P]], %[[V]] : tensor<1x2x4x64x80xf32>, tensor<1x2x80x16xf32>)
// Epilogue: divide by the row sum (0 for an empty row), sigmoid gate, multiply.
// CHECK: %[[G5:.+]] = tensor.expand_shape %[[G]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 64, 16]
// CHECK: %[[OUT:.+]] = linalg.generic {indexing_maps = [#[[ID5]], #[[ROW]], #[[ID5]], #[[ID5]]]
// CHECK-SAME: ins(%[[PV]], %[[SUM]], %[[G5]]
// CHECK: ^bb0(%{{.+}}: f32, %[[ROWSUM:[a-z0-9_]+]]: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK: %[[EMPTY:.+]] = arith.cmpf oeq, %[[ROWSUM]], %[[ZERO:[a-z0-9_]+]] : f32
// CHECK: %[[RCP:.+]] = arith.divf %{{.+}}, %[[ROWSUM]] : f32
// CHECK: arith.select %[[EMPTY]], %[[ZERO]], %[[RCP]] : f32
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: %[[Y:.+]] = arith.mulf
// CHECK: linalg.yield %[[Y]]
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[OUT]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x4x64x16xf32> into tensor<1x8x64x16xf32>
// CHECK: return %[[C]]
func.func @gqa_causal(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x80x32xf32>,
                      %v: tensor<1x2x80x16xf32>, %g: tensor<1x8x64x16xf32>) -> tensor<1x8x64x16xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x8x64x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x16xf32>, tensor<1x8x64x16xf32>) -> tensor<1x8x64x16xf32>
  return %0 : tensor<1x8x64x16xf32>
}

// -----

// Headwise gate shared by all heads: indexed at head 0, channel 0. SiLU, add,
// explicit scale, no mask (the NOMASK lines: no linalg.index in the whole
// function).
// bf16 inputs are extended to f32 and the result is truncated once.
// NOMASK-LABEL: func.func @shared_headwise_silu_add_bf16
// NOMASK-NOT: linalg.index
// NOMASK: return

// CHECK-DAG: #[[GMAP:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d3, 0)>
// CHECK-LABEL: func.func @shared_headwise_silu_add_bf16
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<2x1x16x1xbf16>
// CHECK: linalg.generic
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #[[GMAP]], #{{.+}}]
// CHECK-SAME: ins(%{{.+}}, %{{.+}}, %[[G]] :
// CHECK: %[[GF:.+]] = arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.negf %[[GF]]
// CHECK: %[[SIG:.+]] = arith.divf
// CHECK: %[[SILU:.+]] = arith.mulf %[[GF]], %[[SIG]]
// CHECK: %[[SUM:.+]] = arith.addf %{{.+}}, %[[SILU]]
// CHECK: %[[T:.+]] = arith.truncf %[[SUM]] : f32 to bf16
// CHECK: linalg.yield %[[T]]
func.func @shared_headwise_silu_add_bf16(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x24x8xbf16>,
                                         %v: tensor<2x4x24x8xbf16>, %g: tensor<2x1x16x1xbf16>) -> tensor<2x4x16x8xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g {gate = #gated_attention.gate<silu>, combine = #gated_attention.combine<add>, scale = 0.25 : f32}
      : (tensor<2x4x16x8xbf16>, tensor<2x4x24x8xbf16>, tensor<2x4x24x8xbf16>, tensor<2x1x16x1xbf16>) -> tensor<2x4x16x8xbf16>
  return %0 : tensor<2x4x16x8xbf16>
}

// -----

// NS-sigmoid: 0.5 + 0.5 * sigmoid(g).
// CHECK-LABEL: func.func @ns_sigmoid
// CHECK: arith.negf
// CHECK: %[[SIG:.+]] = arith.divf
// CHECK: %[[HALF:.+]] = arith.mulf %{{.+}}, %[[SIG]]
// CHECK: %[[NS:.+]] = arith.addf %{{.+}}, %[[HALF]]
// CHECK: arith.mulf %{{.+}}, %[[NS]]
func.func @ns_sigmoid(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>,
                      %v: tensor<1x2x4x8xf16>, %g: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %0 = gated_attention.attention %q, %k, %v, %g {gate = #gated_attention.gate<ns_sigmoid>}
      : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %0 : tensor<1x2x4x8xf16>
}

// -----

// Dynamic B, Sq, Skv: sizes come from tensor.dim; the causal offset is
// computed at run time.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<?x4x?x16xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x16xf32>
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[Q]], %c0
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[Q]], %c2
// CHECK-DAG: %[[SKV:.+]] = tensor.dim %[[K]], %c2
// CHECK: tensor.expand_shape %[[Q]] {{\[}}[0], [1, 2], [3], [4]] output_shape [%{{.+}}, 2, 2, %{{.+}}, 16] : tensor<?x4x?x16xf32> into tensor<?x2x2x?x16xf32>
// CHECK: tensor.empty(%[[B]], %[[SQ]], %[[SKV]]) : tensor<?x2x2x?x?xf32>
// CHECK: arith.subi %[[SKV]], %[[SQ]] : index
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x2x?x8xf32> into tensor<?x4x?x8xf32>
func.func @dynamic(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>,
                   %v: tensor<?x2x?x8xf32>, %g: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// A result type more static than the operands gets a tensor.cast.
// CHECK-LABEL: func.func @static_result
// CHECK: %[[C:.+]] = tensor.collapse_shape
// CHECK: %[[R:.+]] = tensor.cast %[[C]] : tensor<?x2x?x8xf32> to tensor<1x2x5x8xf32>
// CHECK: return %[[R]]
func.func @static_result(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                         %v: tensor<?x2x?x8xf32>, %g: tensor<?x2x?x8xf32>) -> tensor<1x2x5x8xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<1x2x5x8xf32>
  return %0 : tensor<1x2x5x8xf32>
}
