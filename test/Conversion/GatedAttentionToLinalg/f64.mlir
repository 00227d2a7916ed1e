// RUN: gated-attention-opt %s --convert-gated-attention-to-linalg --split-input-file \
// RUN:   | FileCheck %s --implicit-check-not=gated_attention.attention
// RUN: gated-attention-opt %s --convert-gated-attention-to-linalg=wide-only=1 \
// RUN:   --split-input-file | FileCheck %s --check-prefix=WIDE

// An f64 op accumulates in f64: scores, row max, weights, sums, P V and the
// log-sum-exp; no f32 anywhere (no extension, no constant, no tensor).
// CHECK-LABEL: func.func @f64
// CHECK-NOT: f32
// CHECK: linalg.generic
// CHECK: ^bb0(%[[Q:.+]]: f64, %[[K:.+]]: f64, %[[S:.+]]: f64):
// CHECK:   %[[P:.+]] = arith.mulf %[[Q]], %[[K]] : f64
// CHECK:   arith.addf %[[S]], %[[P]] : f64
// CHECK-NOT: f32
// CHECK: math.exp %{{.+}} : f64
// CHECK-NOT: f32
// CHECK: math.log %{{.+}} : f64
// CHECK-NOT: f32
// CHECK: return %{{.+}}, %{{.+}} : tensor<1x4x?x8xf64>, tensor<1x4x?xf64>
// WIDE-LABEL: func.func @f64
// WIDE-NOT: gated_attention.attention
// WIDE: return
func.func @f64(%q: tensor<1x4x?x16xf64>, %k: tensor<1x2x?x16xf64>, %v: tensor<1x2x?x8xf64>, %g: tensor<1x4x?x1xf64>) -> (tensor<1x4x?x8xf64>, tensor<1x4x?xf64>) {
  %o, %l = gated_attention.attention %q, %k, %v, %g {causal, gate = #gated_attention.gate<silu>} : (tensor<1x4x?x16xf64>, tensor<1x2x?x16xf64>, tensor<1x2x?x8xf64>, tensor<1x4x?x1xf64>) -> (tensor<1x4x?x8xf64>, tensor<1x4x?xf64>)
  return %o, %l : tensor<1x4x?x8xf64>, tensor<1x4x?xf64>
}

// -----

// f16 still accumulates in f32 (unchanged); wide-only leaves it to the
// tiled lowerings.
// CHECK-LABEL: func.func @f16
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: arith.truncf %{{.+}} : f32 to f16
// WIDE-LABEL: func.func @f16
// WIDE: gated_attention.attention
func.func @f16(%q: tensor<1x4x?x16xf16>, %k: tensor<1x2x?x16xf16>, %v: tensor<1x2x?x8xf16>) -> tensor<1x4x?x8xf16> {
  %o = gated_attention.attention %q, %k, %v : (tensor<1x4x?x16xf16>, tensor<1x2x?x16xf16>, tensor<1x2x?x8xf16>) -> tensor<1x4x?x8xf16>
  return %o : tensor<1x4x?x8xf16>
}
