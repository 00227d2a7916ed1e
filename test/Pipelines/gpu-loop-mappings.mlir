// RUN: gated-attention-opt %s --split-input-file --gated-attention-to-ptx -verify-diagnostics | FileCheck %s

// A CPU tile grid's mapping is dropped: the loop becomes a kernel like any
// other parallel loop (convert-parallel-loops-to-gpu used to print an error
// for it and let the pipeline succeed, the loop run on the host).

// CHECK-LABEL: llvm.func @tile_grid(
// CHECK: gpu.launch_func
// CHECK-NOT: scf.parallel
func.func @tile_grid(%m: memref<2x100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c100 = arith.constant 100 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%b, %q) = (%c0, %c0) to (%c2, %c100) step (%c1, %c32) {
    memref.store %one, %m[%b, %q] : memref<2x100xf32>
    scf.reduce
  } {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1, growing>]}
  return
}

// -----

// Any other mapping that is not GPU processor mappings fails the pipeline.
func.func @foreign(%m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{has a `mapping` ([#gpu.thread<x>]) that is neither GPU processor mappings (#gpu.loop_dim_map) nor a CPU tile grid's}}
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %m[%i] : memref<4xf32>
    scf.reduce
  } {mapping = [#gpu.thread<x>]}
  return
}
