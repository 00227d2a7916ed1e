// RUN: gated-attention-opt %s --convert-memref-copy-to-linalg \
// RUN:   | FileCheck %s --implicit-check-not=memref.copy
// Lowered all the way, a strided copy is a loop, not a call to memrefCopy:
// RUN: gated-attention-opt %s --convert-memref-copy-to-linalg --convert-linalg-to-loops \
// RUN:   --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-cf-to-llvm --convert-func-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN:   | FileCheck %s --check-prefix=LLVM --implicit-check-not=memrefCopy
// With vector-rows, copies of static unit-strided rows are row loops of
// vectors; the others stay linalg.copy:
// RUN: gated-attention-opt %s --convert-memref-copy-to-linalg=vector-rows=32 \
// RUN:   | FileCheck %s --check-prefix=VEC --implicit-check-not=memref.copy
// LLVM-LABEL: llvm.func @strided
// LLVM: llvm.cond_br
// LLVM: llvm.cond_br
// LLVM: llvm.load {{.+}} -> f32
// LLVM: llvm.store {{.+}} : f32, !llvm.ptr

// CHECK-LABEL: func.func @strided
// VEC-LABEL: func.func @strided
// VEC-SAME: (%[[A:.+]]: memref<?x32xf32, strided<[64, 1], offset: ?>>, %[[B:.+]]: memref<?x32xf32>)
// VEC: %[[N:.+]] = memref.dim %[[A]], %c0
// VEC: scf.for %[[I:.+]] = %c0 to %[[N]] step %c1 {
// VEC:   %[[ROW:.+]] = vector.transfer_read %[[A]][%[[I]], %c0], %{{.+}} {in_bounds = [true]} : memref<?x32xf32, strided<[64, 1], offset: ?>>, vector<32xf32>
// VEC:   vector.transfer_write %[[ROW]], %[[B]][%[[I]], %c0] {in_bounds = [true]} : vector<32xf32>, memref<?x32xf32>
// VEC: }
// VEC-NOT: linalg.copy
// CHECK-SAME: (%[[A:.+]]: memref<?x32xf32, strided<[64, 1], offset: ?>>, %[[B:.+]]: memref<?x32xf32>)
// CHECK: linalg.copy ins(%[[A]] : memref<?x32xf32, strided<[64, 1], offset: ?>>) outs(%[[B]] : memref<?x32xf32>)
func.func @strided(%a: memref<?x32xf32, strided<[64, 1], offset: ?>>, %b: memref<?x32xf32>) {
  memref.copy %a, %b : memref<?x32xf32, strided<[64, 1], offset: ?>> to memref<?x32xf32>
  return
}

// Three dimensions, static: two loops around the rows.
// CHECK-LABEL: func.func @rank3
// CHECK: linalg.copy
// VEC-LABEL: func.func @rank3
// VEC: scf.for %[[I:.+]] = %c0 to %c2 step %c1 {
// VEC:   scf.for %[[J:.+]] = %c0 to %c3 step %c1 {
// VEC:     vector.transfer_read %{{.+}}[%[[I]], %[[J]], %c0], %{{.+}} {in_bounds = [true]} : memref<2x3x8xi32>, vector<8xi32>
// VEC:     vector.transfer_write %{{.+}}, %{{.+}}[%[[I]], %[[J]], %c0] {in_bounds = [true]} : vector<8xi32>, memref<2x3x8xi32, strided<[48, 16, 1]>>
func.func @rank3(%a: memref<2x3x8xi32>, %b: memref<2x3x8xi32, strided<[48, 16, 1]>>) {
  memref.copy %a, %b : memref<2x3x8xi32> to memref<2x3x8xi32, strided<[48, 16, 1]>>
  return
}

// Rows too long for vector-rows=32, of dynamic size, strided inside, or of
// a type vectors do not hold: element loops as before.
// VEC-LABEL: func.func @not_rows
// VEC-NOT: vector.transfer_read
// VEC-COUNT-4: linalg.copy
// VEC-NOT: vector.transfer_read
func.func @not_rows(%a: memref<4x64xf32>, %b: memref<4x64xf32>,
                    %c: memref<4x?xf32>, %d: memref<4x?xf32>,
                    %e: memref<4x8xf32, strided<[16, 2]>>, %f: memref<4x8xf32>,
                    %g: memref<4x8xindex>, %h: memref<4x8xindex>) {
  memref.copy %a, %b : memref<4x64xf32> to memref<4x64xf32>
  memref.copy %c, %d : memref<4x?xf32> to memref<4x?xf32>
  memref.copy %e, %f : memref<4x8xf32, strided<[16, 2]>> to memref<4x8xf32>
  memref.copy %g, %h : memref<4x8xindex> to memref<4x8xindex>
  return
}
