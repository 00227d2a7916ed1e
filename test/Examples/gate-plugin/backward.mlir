// RUN: gated-attention-opt --load-dialect-plugin=%gate_variants_plugin %s \
// RUN:   --convert-gated-attention-backward-to-linalg -canonicalize | FileCheck %s
// RUN: gated-attention-opt --load-dialect-plugin=%gate_variants_plugin %s \
// RUN:   --gated-attention-to-llvm | FileCheck %s --check-prefix=LLVM \
// RUN:   --implicit-check-not=gated_attention. --implicit-check-not=linalg.

// The temperature sigmoid implements GateDerivativeAttrInterface with a
// bounded act'/act: the backward op takes it and, as for the built-in
// sigmoid, reads the gate's gradient from the saved output (dOut * out *
// sigmoid(-g / T) / T): the value is read once (dP), Y is not recomputed.
// CHECK-LABEL: func.func @temperature_sigmoid
// CHECK-SAME: %[[V:[^:]+]]: tensor<1x2x?x8xf32>, %[[O:[^:]+]]: tensor<1x4x?x8xf32>
// CHECK: %[[O5:.+]] = tensor.expand_shape %[[O]]
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[V]] :
// CHECK-NOT: ins(%{{.+}}, %[[V]] :
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}}, %[[O5]] :
// CHECK: return
// LLVM-LABEL: llvm.func @temperature_sigmoid
func.func @temperature_sigmoid(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>, %o: tensor<1x4x?x8xf32>, %do: tensor<1x4x?x8xf32>, %g: tensor<1x4x?x8xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>) {
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g {causal, gate = #gate_variants.sigmoid<temperature = 2.0 : f32>} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32>
}
