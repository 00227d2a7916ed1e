// RUN: gated-attention-opt %s --convert-gated-attention-backward-to-linalg \
// RUN:   --split-input-file | FileCheck %s \
// RUN:   --implicit-check-not=gated_attention.attention_backward
// RUN: gated-attention-opt %s --split-input-file \
// RUN:   --convert-gated-attention-backward-to-linalg=wide-only=1 \
// RUN:   | FileCheck %s --check-prefix=WIDE

// An f64 backward accumulates in f64: the weights from the f64 lse, dY, D,
// dP, dS and every gradient; no f32 anywhere and no rounding.
// CHECK-LABEL: func.func @f64
// CHECK-NOT: f32
// CHECK: math.exp %{{.+}} : f64
// CHECK-NOT: f32
// CHECK-NOT: arith.truncf
// CHECK: return
// WIDE-LABEL: func.func @f64
// WIDE-NOT: gated_attention.attention_backward
// WIDE: return
func.func @f64(%q: tensor<1x4x?x16xf64>, %k: tensor<1x2x?x16xf64>, %v: tensor<1x2x?x8xf64>, %o: tensor<1x4x?x8xf64>, %do: tensor<1x4x?x8xf64>, %g: tensor<1x1x?x8xf64>, %lse: tensor<1x4x?xf64>) -> (tensor<1x4x?x16xf64>, tensor<1x2x?x16xf64>, tensor<1x2x?x8xf64>, tensor<1x1x?x8xf64>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal, combine = #gated_attention.combine<add>}
      : (tensor<1x4x?x16xf64>, tensor<1x2x?x16xf64>, tensor<1x2x?x8xf64>, tensor<1x4x?x8xf64>, tensor<1x4x?x8xf64>, tensor<1x1x?x8xf64>, tensor<1x4x?xf64>)
      -> (tensor<1x4x?x16xf64>, tensor<1x2x?x16xf64>, tensor<1x2x?x8xf64>, tensor<1x1x?x8xf64>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x4x?x16xf64>, tensor<1x2x?x16xf64>, tensor<1x2x?x8xf64>, tensor<1x1x?x8xf64>
}

// -----

// bf16 still accumulates in f32 and rounds each gradient once; wide-only
// leaves it to the tiled backward.
// CHECK-LABEL: func.func @bf16
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// WIDE-LABEL: func.func @bf16
// WIDE: gated_attention.attention_backward
func.func @bf16(%q: tensor<1x2x?x16xbf16>, %k: tensor<1x2x?x16xbf16>, %v: tensor<1x2x?x16xbf16>, %o: tensor<1x2x?x16xbf16>, %do: tensor<1x2x?x16xbf16>) -> (tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>) {
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do
      : (tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>)
      -> (tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>
}
