// RUN: gated-attention-opt %s --convert-memref-copy-to-linalg \
// RUN:   | FileCheck %s --implicit-check-not=memref.copy
// Lowered all the way, a strided copy is a loop, not a call to memrefCopy:
// RUN: gated-attention-opt %s --convert-memref-copy-to-linalg --convert-linalg-to-loops \
// RUN:   --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-cf-to-llvm --convert-func-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN:   | FileCheck %s --check-prefix=LLVM --implicit-check-not=memrefCopy
// LLVM-LABEL: llvm.func @strided
// LLVM: llvm.cond_br
// LLVM: llvm.cond_br
// LLVM: llvm.load {{.+}} -> f32
// LLVM: llvm.store {{.+}} : f32, !llvm.ptr

// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[A:.+]]: memref<?x32xf32, strided<[64, 1], offset: ?>>, %[[B:.+]]: memref<?x32xf32>)
// CHECK: linalg.copy ins(%[[A]] : memref<?x32xf32, strided<[64, 1], offset: ?>>) outs(%[[B]] : memref<?x32xf32>)
func.func @strided(%a: memref<?x32xf32, strided<[64, 1], offset: ?>>, %b: memref<?x32xf32>) {
  memref.copy %a, %b : memref<?x32xf32, strided<[64, 1], offset: ?>> to memref<?x32xf32>
  return
}
