// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics \
// RUN:   --gated-attention-amx-tiles | FileCheck %s

// A 32 x 32 output tile over 64 pairs (D = 128): 2 x 2 accumulators of
// 16 x 16 f32, each loaded and stored once; per 16 pairs (a 64-byte row,
// 4 steps) 2 left and 2 right operand tiles and 4 products. The
// (rows, pairs, 2) buffers are read as (rows, 2 x pairs) tile rows. The
// module gets the constructor that asks Linux for the AMX tile data.
#lhs = affine_map<(m, n, k, p) -> (m, k, p)>
#rhs = affine_map<(m, n, k, p) -> (k, n, p)>
#acc = affine_map<(m, n, k, p) -> (m, n)>
// CHECK-LABEL: func.func @scores
// CHECK-SAME: (%[[Q:.+]]: memref<32x64x2xbf16, strided<[256, 2, 1], offset: ?>>, %[[K:.+]]: memref<64x32x2xbf16>, %[[S:.+]]: memref<32x32xf32, strided<[64, 1], offset: ?>>)
// CHECK-DAG: %[[QROWS:.+]] = memref.collapse_shape %[[Q]] {{\[\[}}0], [1, 2]] : {{.+}} into memref<32x128xbf16, strided<[256, 1], offset: ?>>
// CHECK-DAG: %[[KROWS:.+]] = memref.collapse_shape %[[K]] {{\[\[}}0], [1, 2]] : memref<64x32x2xbf16> into memref<64x64xbf16>
// CHECK-COUNT-4: amx.tile_load %[[S]]{{.+}} into !amx.tile<16x16xf32>
// CHECK-COUNT-2: amx.tile_load %[[QROWS]]{{.+}} into !amx.tile<16x32xbf16>
// CHECK-COUNT-2: amx.tile_load %[[KROWS]]{{.+}} into !amx.tile<16x32xbf16>
// CHECK-COUNT-4: amx.tile_mulf {{.+}} : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
// CHECK-COUNT-24: amx.tile_{{load|mulf}}
// CHECK-NOT: amx.tile_load
// CHECK-NOT: amx.tile_mulf
// CHECK-COUNT-4: amx.tile_store %[[S]]
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK: llvm.func internal @__gated_attention_request_amx()
// CHECK: llvm.call @syscall
// CHECK: llvm.call @write
// CHECK: llvm.call @_exit
// CHECK: llvm.mlir.global_ctors ctors = [@__gated_attention_request_amx]
func.func @scores(%q: memref<32x64x2xbf16, strided<[256, 2, 1], offset: ?>>,
                  %k: memref<64x32x2xbf16>,
                  %s: memref<32x32xf32, strided<[64, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%q, %k : memref<32x64x2xbf16, strided<[256, 2, 1], offset: ?>>, memref<64x32x2xbf16>)
      outs(%s : memref<32x32xf32, strided<[64, 1], offset: ?>>) {
  ^bb0(%a: bf16, %b: bf16, %c: f32):
    %x = arith.extf %a : bf16 to f32
    %y = arith.extf %b : bf16 to f32
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %c, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A contraction that starts from zero (S = Q Kᵀ; marked by
// gated-attention-vectorize-tiles, which leaves its buffer unfilled):
// its accumulator tiles start from tilezero, not from loads.
#lhs = affine_map<(m, n, k, p) -> (m, k, p)>
#rhs = affine_map<(m, n, k, p) -> (k, n, p)>
#acc = affine_map<(m, n, k, p) -> (m, n)>
// CHECK-LABEL: func.func @scores_from_zero
// CHECK-SAME: (%{{.+}}: memref<32x64x2xbf16>, %{{.+}}: memref<64x32x2xbf16>, %[[S:.+]]: memref<32x32xf32>)
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK-NOT: amx.tile_load %[[S]]
// CHECK: amx.tile_mulf
// CHECK-NOT: amx.tile_load %[[S]]
// CHECK-COUNT-4: amx.tile_store %[[S]]
// CHECK: return
func.func @scores_from_zero(%q: memref<32x64x2xbf16>, %k: memref<64x32x2xbf16>,
                            %s: memref<32x32xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%q, %k : memref<32x64x2xbf16>, memref<64x32x2xbf16>)
      outs(%s : memref<32x32xf32>) attrs = {gated_attention.amx_zero_start} {
  ^bb0(%a: bf16, %b: bf16, %c: f32):
    %x = arith.extf %a : bf16 to f32
    %y = arith.extf %b : bf16 to f32
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %c, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Shapes that are not multiples of 16: the largest tile edges dividing
// them (8 rows, 12 columns, 6 of 24 pairs).
#lhs = affine_map<(m, n, k, p) -> (m, k, p)>
#rhs = affine_map<(m, n, k, p) -> (k, n, p)>
#acc = affine_map<(m, n, k, p) -> (m, n)>
// CHECK-LABEL: func.func @odd_shapes
// CHECK-COUNT-1: amx.tile_load {{.+}} into !amx.tile<8x12xf32>
// CHECK-NOT: into !amx.tile<8x12xf32>
// CHECK-COUNT-2: amx.tile_mulf {{.+}} : !amx.tile<8x24xbf16>, !amx.tile<12x24xbf16>, !amx.tile<8x12xf32>
// CHECK-COUNT-1: amx.tile_store
// CHECK-NOT: amx.tile_store
// CHECK: return
// One constructor per module.
// CHECK-COUNT-1: llvm.mlir.global_ctors
// CHECK-NOT: llvm.mlir.global_ctors
func.func @odd_shapes(%q: memref<8x24x2xbf16>, %k: memref<24x12x2xbf16>,
                      %s: memref<8x12xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%q, %k : memref<8x24x2xbf16>, memref<24x12x2xbf16>)
      outs(%s : memref<8x12xf32>) {
  ^bb0(%a: bf16, %b: bf16, %c: f32):
    %x = arith.extf %a : bf16 to f32
    %y = arith.extf %b : bf16 to f32
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %c, %p : f32
    linalg.yield %r : f32
  }
  return
}
func.func @second_user(%q: memref<8x24x2xbf16>, %k: memref<24x12x2xbf16>,
                       %s: memref<8x12xf32>) {
  call @odd_shapes(%q, %k, %s) : (memref<8x24x2xbf16>, memref<24x12x2xbf16>, memref<8x12xf32>) -> ()
  return
}

// -----

// A 4-loop bf16 contraction whose right operand is not k/2 x n x 2 is not
// one this pass knows how to tile.
#lhs = affine_map<(m, n, k, p) -> (m, k, p)>
#rhs = affine_map<(m, n, k, p) -> (n, k, p)>
#acc = affine_map<(m, n, k, p) -> (m, n)>
func.func @transposed_rhs(%q: memref<16x16x2xbf16>, %k: memref<16x16x2xbf16>,
                          %s: memref<16x16xf32>) {
  // expected-error @+1 {{expected a static pair contraction of gated-attention-vectorize-tiles (left m x k/2 x 2, right k/2 x n x 2)}}
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%q, %k : memref<16x16x2xbf16>, memref<16x16x2xbf16>)
      outs(%s : memref<16x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %c: f32):
    %x = arith.extf %a : bf16 to f32
    %y = arith.extf %b : bf16 to f32
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %c, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Pairs not contiguous in a row (a pair stride of 4) cannot be tile rows.
#lhs = affine_map<(m, n, k, p) -> (m, k, p)>
#rhs = affine_map<(m, n, k, p) -> (k, n, p)>
#acc = affine_map<(m, n, k, p) -> (m, n)>
func.func @strided_pairs(%q: memref<16x16x2xbf16, strided<[64, 4, 1]>>,
                         %k: memref<16x16x2xbf16>, %s: memref<16x16xf32>) {
  // expected-error @+1 {{AMX tiles need the pairs of each operand row contiguous in memory}}
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%q, %k : memref<16x16x2xbf16, strided<[64, 4, 1]>>, memref<16x16x2xbf16>)
      outs(%s : memref<16x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %c: f32):
    %x = arith.extf %a : bf16 to f32
    %y = arith.extf %b : bf16 to f32
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %c, %p : f32
    linalg.yield %r : f32
  }
  return
}
