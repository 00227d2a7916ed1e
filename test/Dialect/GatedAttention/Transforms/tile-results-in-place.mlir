// RUN: gated-attention-opt %s --gated-attention-tile-results-in-place --split-input-file | FileCheck %s
// Upstream alone, for contrast: its innermost-first walk leaves the first
// piece in a scratch tensor.empty.
// RUN: gated-attention-opt %s --eliminate-empty-tensors --split-input-file | FileCheck %s --check-prefix=UPSTREAM
// Then upstream's pass and bufferization: every piece is written in place
// in the grid's output, with no allocation and no copy of the tile.
// RUN: gated-attention-opt %s --gated-attention-tile-results-in-place --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries" --cse --canonicalize --split-input-file | FileCheck %s --check-prefix=BUF

// A tile of two pieces (two stacked heads), each computed into a
// tensor.empty, inserted into the tile's tensor.empty, which the grid
// writes into its output.

// CHECK-LABEL: func.func @two_heads
// CHECK-SAME:    %[[IN:[a-z0-9]+]]: tensor<2x4x8xf32>
// CHECK:         scf.forall (%[[I:.+]]) in (4) shared_outs(%[[OUT:.+]] = %{{.+}})
// The tile's result starts as the slice of the output it is written to.
// CHECK:           %[[DEST:.+]] = tensor.extract_slice %[[OUT]][0, %[[I]], 0] [2, 1, 8] [1, 1, 1]
// CHECK:           tensor.insert_slice %{{.+}} into %[[DEST]][0, 0, 0] [1, 1, 8]
// CHECK:           scf.forall.in_parallel
// UPSTREAM-LABEL: func.func @two_heads
// UPSTREAM:         %[[TILE:.+]] = tensor.empty() : tensor<2x1x8xf32>
// UPSTREAM:         tensor.extract_slice %[[TILE]][0, 0, 0] [1, 1, 8]
// BUF-LABEL: func.func @two_heads
// BUF-NOT:     memref.alloc
// BUF-NOT:     memref.copy
// BUF:         return
func.func @two_heads(%in: tensor<2x4x8xf32>, %out: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %r = scf.forall (%i) in (4) shared_outs(%o = %out) -> (tensor<2x4x8xf32>) {
    %tile = tensor.empty() : tensor<2x1x8xf32>
    %h0 = tensor.extract_slice %in[0, %i, 0] [1, 1, 8] [1, 1, 1] : tensor<2x4x8xf32> to tensor<8xf32>
    %e0 = tensor.empty() : tensor<8xf32>
    %y0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%h0 : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<8xf32>
    %t0 = tensor.insert_slice %y0 into %tile[0, 0, 0] [1, 1, 8] [1, 1, 1] : tensor<8xf32> into tensor<2x1x8xf32>
    %h1 = tensor.extract_slice %in[1, %i, 0] [1, 1, 8] [1, 1, 1] : tensor<2x4x8xf32> to tensor<8xf32>
    %e1 = tensor.empty() : tensor<8xf32>
    %y1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%h1 : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<8xf32>
    %t1 = tensor.insert_slice %y1 into %t0[1, 0, 0] [1, 1, 8] [1, 1, 1] : tensor<8xf32> into tensor<2x1x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t1 into %o[0, %i, 0] [2, 1, 8] [1, 1, 1] : tensor<2x1x8xf32> into tensor<2x4x8xf32>
    }
  }
  return %r : tensor<2x4x8xf32>
}

// -----

// A tile in two versions (all rows, or the rows left at the end of the
// sequence), both inserting into the tile's one tensor.empty. Upstream
// eliminates it for one version only, whichever its walk reaches first in
// an order that changed from run to run (the same function compiled to
// different code); the other computed into a scratch buffer and copied.
// Each use gets its own empty: both versions write into the output.
// CHECK-LABEL: func.func @two_versions
// CHECK:         scf.forall (%[[I:.+]]) in (4) shared_outs(%[[OUT:.+]] = %{{.+}})
// CHECK-DAG:       %[[D0:[a-z_0-9]+]] = tensor.extract_slice %[[OUT]][%[[I]], 0] [1, 8] [1, 1]
// CHECK-DAG:       %[[D1:[a-z_0-9]+]] = tensor.extract_slice %[[OUT]][%[[I]], 0] [1, 8] [1, 1]
// CHECK:           scf.if
// CHECK:             tensor.insert_slice %{{.+}} into %[[D1]][0, 0]
// CHECK:           } else {
// CHECK:             tensor.insert_slice %{{.+}} into %[[D0]][0, 0]
// BUF-LABEL: func.func @two_versions
// BUF-NOT:     memref.alloc
// BUF-NOT:     memref.copy
// BUF:         return
func.func @two_versions(%in: tensor<4x8xf32>, %out: tensor<4x8xf32>, %full: i1) -> tensor<4x8xf32> {
  %r = scf.forall (%i) in (4) shared_outs(%o = %out) -> (tensor<4x8xf32>) {
    %tile = tensor.empty() : tensor<1x8xf32>
    %h = tensor.extract_slice %in[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
    %v = scf.if %full -> (tensor<1x8xf32>) {
      %e = tensor.empty() : tensor<8xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%h : tensor<8xf32>) outs(%e : tensor<8xf32>) {
      ^bb0(%a: f32, %b: f32):
        %s = arith.mulf %a, %a : f32
        linalg.yield %s : f32
      } -> tensor<8xf32>
      %t = tensor.insert_slice %y into %tile[0, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<1x8xf32>
      scf.yield %t : tensor<1x8xf32>
    } else {
      %e = tensor.empty() : tensor<8xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%h : tensor<8xf32>) outs(%e : tensor<8xf32>) {
      ^bb0(%a: f32, %b: f32):
        %s = arith.addf %a, %a : f32
        linalg.yield %s : f32
      } -> tensor<8xf32>
      %t = tensor.insert_slice %y into %tile[0, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<1x8xf32>
      scf.yield %t : tensor<1x8xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %v into %o[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    }
  }
  return %r : tensor<4x8xf32>
}

// -----

// No scf.forall: nothing to do, and the module is left as it is.
// CHECK-LABEL: func.func @no_grid
// CHECK-NEXT:    tensor.empty
// CHECK-NEXT:    return
func.func @no_grid() -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  return %e : tensor<4xf32>
}
