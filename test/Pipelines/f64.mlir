// The CPU pipeline lowers f64 ops through the reference lowerings (the
// tiled ones accumulate in f32): f64 arithmetic to the end, no f32 value,
// no OpenMP loop of the tiled forms.
// RUN: gated-attention-opt %s --gated-attention-to-llvm | FileCheck %s \
// RUN:   --implicit-check-not=gated_attention.
// The tiled forward and the GPU lowerings refuse f64 ops, naming why.
// RUN: not gated-attention-opt %s --gated-attention-tile 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TILE
// RUN: not gated-attention-opt %s --gated-attention-to-ptx 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PTX

// TILE: error: the tiled online softmax accumulates in f32 and does not take f64 ops
// PTX: error: no GPU lowering of the backward: the backward kernels take f16 or bf16, not f64

// CHECK-LABEL: llvm.func @forward
// CHECK-NOT: f32
// CHECK-NOT: omp.
// CHECK: llvm.fmul %{{.+}}, %{{.+}} : f64
// CHECK-NOT: f32
// CHECK: llvm.intr.exp(%{{.+}}) : (f64) -> f64
// CHECK-NOT: f32
// CHECK-LABEL: llvm.func @backward
// CHECK-NOT: f32
// CHECK-NOT: omp.
// CHECK: llvm.intr.exp(%{{.+}}) : (f64) -> f64
// CHECK-NOT: f32
// CHECK-LABEL: llvm.func @_mlir_ciface_backward
func.func @forward(%q: tensor<?x4x?x16xf64>, %k: tensor<?x2x?x16xf64>, %v: tensor<?x2x?x8xf64>, %g: tensor<?x4x?x8xf64>) -> (tensor<?x4x?x8xf64>, tensor<?x4x?xf64>) attributes {llvm.emit_c_interface} {
  %o, %l = gated_attention.attention %q, %k, %v, %g {causal} : (tensor<?x4x?x16xf64>, tensor<?x2x?x16xf64>, tensor<?x2x?x8xf64>, tensor<?x4x?x8xf64>) -> (tensor<?x4x?x8xf64>, tensor<?x4x?xf64>)
  return %o, %l : tensor<?x4x?x8xf64>, tensor<?x4x?xf64>
}

func.func @backward(%q: tensor<?x4x?x16xf64>, %k: tensor<?x2x?x16xf64>, %v: tensor<?x2x?x8xf64>, %o: tensor<?x4x?x8xf64>, %do: tensor<?x4x?x8xf64>, %g: tensor<?x4x?x8xf64>, %l: tensor<?x4x?xf64>) -> (tensor<?x4x?x16xf64>, tensor<?x2x?x16xf64>, tensor<?x2x?x8xf64>, tensor<?x4x?x8xf64>) attributes {llvm.emit_c_interface} {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%l) {causal}
      : (tensor<?x4x?x16xf64>, tensor<?x2x?x16xf64>, tensor<?x2x?x8xf64>, tensor<?x4x?x8xf64>, tensor<?x4x?x8xf64>, tensor<?x4x?x8xf64>, tensor<?x4x?xf64>)
      -> (tensor<?x4x?x16xf64>, tensor<?x2x?x16xf64>, tensor<?x2x?x8xf64>, tensor<?x4x?x8xf64>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x4x?x16xf64>, tensor<?x2x?x16xf64>, tensor<?x2x?x8xf64>, tensor<?x4x?x8xf64>
}
