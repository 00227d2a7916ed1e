// RUN: gated-attention-opt %s --convert-memref-copy-to-linalg | FileCheck %s
// Lowered all the way, a strided copy is a loop, not a call to memrefCopy:
// RUN: gated-attention-opt %s --convert-memref-copy-to-linalg --convert-linalg-to-loops \
// RUN:   --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-cf-to-llvm --convert-func-to-llvm \
// RUN:   --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM
// LLVM-NOT: memrefCopy
// LLVM: llvm.func @strided

// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[A:.+]]: memref<?x32xf32, strided<[64, 1], offset: ?>>, %[[B:.+]]: memref<?x32xf32>)
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[A]] : memref<?x32xf32, strided<[64, 1], offset: ?>>) outs(%[[B]] : memref<?x32xf32>)
func.func @strided(%a: memref<?x32xf32, strided<[64, 1], offset: ?>>, %b: memref<?x32xf32>) {
  memref.copy %a, %b : memref<?x32xf32, strided<[64, 1], offset: ?>> to memref<?x32xf32>
  return
}
