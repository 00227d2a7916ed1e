// RUN: gated-attention-opt %s --gated-attention-tiles-to-openmp --split-input-file | FileCheck %s
// RUN: gated-attention-opt %s --split-input-file | gated-attention-opt --split-input-file | FileCheck %s --check-prefix=ROUNDTRIP

// A causal grid: the growing query-block loop runs last to first, in its
// place; threads take one tile at a time.

// ROUNDTRIP-LABEL: func.func @causal_grid
// ROUNDTRIP: {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>, #gated_attention.tile<2, growing>]}
// CHECK-LABEL: func.func @causal_grid(
// CHECK-SAME:    %[[M:.+]]: memref<2x3x100xf32>, %[[SQ:.+]]: index)
// CHECK-DAG:     %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG:     %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG:     %[[C32:.+]] = arith.constant 32 : index
// CHECK:         %[[DIFF:.+]] = arith.subi %[[SQ]], %[[C0]] : index
// CHECK:         %[[EXTENT:.+]] = arith.maxsi %[[DIFF]], %{{.+}} : index
// CHECK:         %[[N:.+]] = arith.ceildivui %[[EXTENT]], %[[C32]] : index
// CHECK:         omp.parallel {
// CHECK-NEXT:      omp.wsloop schedule(dynamic) {
// CHECK-NEXT:        omp.loop_nest (%[[B:.+]], %[[H:.+]], %[[K:.+]]) : index = (%[[C0]], %[[C0]], %{{.+}}) to (%[[C2]], %[[C3]], %[[N]]) step (%[[C1]], %[[C1]], %{{.+}}) collapse(3) {
// CHECK:             %[[LAST:.+]] = arith.subi %[[N]], %{{.+}} : index
// CHECK:             %[[BLOCK:.+]] = arith.subi %[[LAST]], %[[K]] : index
// CHECK:             %[[OFF:.+]] = arith.muli %[[BLOCK]], %[[C32]] : index
// CHECK:             %[[Q:.+]] = arith.addi %[[C0]], %[[OFF]] : index
// CHECK:             memref.alloca_scope {
// CHECK:               memref.alloca() : memref<32xf32>
// CHECK:               memref.store %{{.+}}, %[[M]][%[[B]], %[[H]], %[[Q]]]
// CHECK:             }
// CHECK:             omp.yield
// CHECK:           }
// CHECK:         }
// CHECK:         omp.terminator
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @causal_grid(%m: memref<2x3x100xf32>, %sq: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%b, %h, %q) = (%c0, %c0, %c0) to (%c2, %c3, %sq) step (%c1, %c1, %c32) {
    %scratch = memref.alloca() : memref<32xf32>
    memref.store %one, %m[%b, %h, %q] : memref<2x3x100xf32>
    scf.reduce
  } {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>, #gated_attention.tile<2, growing>]}
  return
}

// -----

// Equal tiles keep their order; still taken one at a time.

// CHECK-LABEL: func.func @plain_grid
// CHECK:         omp.wsloop schedule(dynamic) {
// CHECK-NEXT:      omp.loop_nest (%[[B:.+]], %[[Q:.+]]) : index = (%c0, %c0) to (%c2, %c100) step (%c1, %c32) collapse(2) {
// CHECK-NOT:         arith.subi
// CHECK:             memref.alloca_scope {
// CHECK:               memref.store %{{.+}}, %{{.+}}[%[[B]], %[[Q]]]
func.func @plain_grid(%m: memref<2x100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c100 = arith.constant 100 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%b, %q) = (%c0, %c0) to (%c2, %c100) step (%c1, %c32) {
    memref.store %one, %m[%b, %q] : memref<2x100xf32>
    scf.reduce
  } {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>]}
  return
}

// -----

// Loops that are not tile grids, and loops with reductions, are left to
// convert-scf-to-openmp; a grid inside a grid's tile runs in its thread.

// CHECK-LABEL: func.func @not_grids
// CHECK-NOT:     omp.
// CHECK:         scf.parallel
// CHECK:         scf.parallel
// CHECK:         scf.reduce(
// CHECK-LABEL: func.func @nested_grid
// CHECK:         omp.wsloop schedule(dynamic)
// CHECK:           memref.alloca_scope
// CHECK-NOT:         omp.
// CHECK:             scf.parallel
// CHECK:             } {mapping = [#gated_attention.tile<0>]}
func.func @not_grids(%m: memref<100xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c100) step (%c1) {
    memref.store %zero, %m[%i] : memref<100xf32>
    scf.reduce
  }
  %sum = scf.parallel (%i) = (%c0) to (%c100) step (%c1) init (%zero) -> f32 {
    %x = memref.load %m[%i] : memref<100xf32>
    scf.reduce(%x : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  } {mapping = [#gated_attention.tile<0>]}
  return %sum : f32
}
func.func @nested_grid(%m: memref<4x100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c100 = arith.constant 100 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%b) = (%c0) to (%c4) step (%c1) {
    scf.parallel (%q) = (%c0) to (%c100) step (%c1) {
      memref.store %one, %m[%b, %q] : memref<4x100xf32>
      scf.reduce
    } {mapping = [#gated_attention.tile<0>]}
    scf.reduce
  } {mapping = [#gated_attention.tile<0>]}
  return
}
