// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   --canonicalize --cse | FileCheck %s

// A decode step (static Sq = 1; B and Skv dynamic) whose B x Hq one-row
// tiles would leave the GPU idle takes split-KV. A CTA of the split kernel
// packs the query rows of the G = 4 heads of one K/V head (so each K/V
// block is loaded once for them): a split is B x Hq / 4 CTAs. The splits
// from host sizes only, min(ceildiv(264, B x Hq / 4), ceildiv(Skv, 256),
// 64), at least 1; with more than one, the split kernel on grid (splits,
// Hq / 4, B) writes f32 partials [splits, B, Hq, Dv] and [splits, B, Hq]
// (its arguments: the dense kernel's, then the partials, splits and T = B),
// and the merge kernel, a CTA per (batch, head), combines them and applies
// the gate into the result; otherwise the direct kernel.
// CHECK-LABEL: func.func @decode
// CHECK-SAME:    (%{{[^:]+}}: tensor<?x8x1x64xbf16>, %[[K:[^:]+]]: tensor<?x2x?x64xbf16>,
// CHECK:         %[[B:.+]] = tensor.dim %arg0, %c0
// CHECK:         %[[SKV:.+]] = tensor.dim %[[K]], %c2
// CHECK:         %[[Q:.+]] = memref.collapse_shape {{.+}} : memref<?x8x1x64xbf16> into memref<?xbf16>
// CHECK:         %[[G:.+]] = memref.collapse_shape {{.+}} : memref<?x8x1x1xbf16> into memref<?xbf16>
// CHECK:         %[[OUT:.+]] = memref.collapse_shape {{.+}} : memref<?x8x1x64xbf16> into memref<?xbf16>
// CHECK:         %[[NONEMPTY:.+]] = arith.cmpi ugt, %[[B]], %c0
// CHECK:         %[[CTAS:.+]] = arith.muli %[[B]], %c2
// CHECK:         %[[WANTED:.+]] = arith.ceildivui %c264, %[[CTAS]]
// CHECK:         %[[FITTING:.+]] = arith.ceildivui %[[SKV]], %c256
// CHECK:         %[[MOST:.+]] = arith.minui %[[FITTING]], %c64
// CHECK:         %[[MIN:.+]] = arith.minui %[[WANTED]], %[[MOST]]
// CHECK:         %[[SPLITS:.+]] = arith.maxui %[[MIN]], %c1
// CHECK:         %[[MANY:.+]] = arith.cmpi ugt, %[[SPLITS]], %c1
// CHECK:         %[[SPLIT:.+]] = arith.andi %[[NONEMPTY]], %[[MANY]]
// CHECK:         scf.if %[[SPLIT]] {
// CHECK:           %[[PO:.+]] = memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK:           %[[PL:.+]] = memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK:           gpu.launch_func @[[SPLITK:gated_attention_bf16_h8x2_d64_causal_headwise_split]]::@[[SPLITK]] blocks in (%[[SPLITS]], %c2, %[[B]])
// CHECK-SAME:        args(%[[Q]] : memref<?xbf16>, {{.+}}, %[[G]] : memref<?xbf16>, %[[OUT]] : memref<?xbf16>, %c1 : index, %[[SKV]] : index, {{.+}}, %[[PO]] : memref<?xf32>, %[[PL]] : memref<?xf32>, %[[SPLITS]] : index, %[[B]] : index)
// CHECK:           gpu.launch_func @[[MERGE:gated_attention_bf16_h8x2_d64_causal_headwise_merge]]::@[[MERGE]] blocks in (%[[B]], %c8, %c1)
// CHECK-SAME:        args(%[[G]] : memref<?xbf16>, %[[OUT]] : memref<?xbf16>, %[[PO]] : memref<?xf32>, %[[PL]] : memref<?xf32>, %[[B]] : index, %[[SPLITS]] : index)
// CHECK-NOT:           memref.dealloc
// CHECK:         } else {
// CHECK:           scf.if %[[NONEMPTY]] {
// CHECK:             gpu.launch_func @[[DIRECT:gated_attention_bf16_h8x2_d64_causal_headwise]]::@[[DIRECT]] blocks in (%c1, %c2, %[[B]])
// The split kernel's description: grid (splits, Hq / 4, B), the dense
// arguments, then the partials, splits and T.
// CHECK: gpu.module @gated_attention_bf16_h8x2_d64_causal_headwise_split
// CHECK: gpu.func @gated_attention_bf16_h8x2_d64_causal_headwise_split(%{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: memref<?xbf16>, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: index, %{{.+}}: index)
func.func @decode(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %g: tensor<?x8x1x1xbf16>) -> tensor<?x8x1x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal} : (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x1x1xbf16>) -> tensor<?x8x1x64xbf16>
  return %r : tensor<?x8x1x64xbf16>
}

// -----

// Sq dynamic (or above 1): one kernel, no split-KV (a decode pair for every
// dynamic-Sq op would double its compile).
// CHECK-LABEL: func.func @prefill
// CHECK-NOT:     _split
// CHECK-NOT:     _merge
// CHECK:         gpu.launch_func @gated_attention_bf16_h8x2_d64_nogate::@gated_attention_bf16_h8x2_d64_nogate
// CHECK-NOT:     _split
// CHECK-NOT:     _merge
func.func @prefill(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %r = gated_attention.attention %q, %k, %v : (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xbf16>
  return %r : tensor<?x8x?x64xbf16>
}

// -----

// An output whose rows are not packed ([B, S, H, D] for a launcher outside
// MLIR: gated_attention.row_strides) is not the merge kernel's [T, H, Dv]:
// the direct kernel only.
// CHECK-LABEL: func.func @strided_out
// CHECK-NOT:     _split
// CHECK:         gpu.launch_func @[[K:gated_attention_bf16_h8x2_d64_nogate]]::@[[K]]
// CHECK-NOT:     _split
func.func @strided_out(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>) -> tensor<2x8x1x64xbf16> {
  %r = gated_attention.attention %q, %k, %v {gated_attention.row_strides = array<i64: 64, 64, 64, 64, 512>} : (tensor<2x8x1x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>) -> tensor<2x8x1x64xbf16>
  return %r : tensor<2x8x1x64xbf16>
}
