// RUN: gated-attention-opt %s --split-input-file --gated-attention-tile="query-block=32 key-block=32" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles --canonicalize --cse > %t
// RUN: FileCheck %s --input-file=%t
// RUN: FileCheck %s --input-file=%t --check-prefix=NONE

// After vectorization no linalg op is left in the tiles and math.exp has
// become its polynomial approximation: NONE checks the whole function (its
// NOTs scan everything between the two labels).
// NONE-LABEL: func.func @gqa_causal_bf16
// NONE-NOT: linalg.
// NONE-NOT: math.exp
// NONE-LABEL: func.func @user_forall
// Contractions are FMAs on register rows, and the online-softmax loop still
// carries (m, l, acc), the compensations of l and acc, the open chunk of
// acc and whether one was folded (OnlineSoftmaxTile::chunkStep), max|v|
// and sigma.
// CHECK-LABEL: func.func @gqa_causal_bf16
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK: %[[ZERO32:.+]] = arith.constant dense<0.000000e+00> : vector<32xf32>
// CHECK: scf.forall
// CHECK: scf.for %{{.+}} iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}, %[[LC:.+]] = %{{.+}}, %[[ACC:.+]] = %{{.+}}, %[[ACCC:.+]] = %{{.+}}, %[[CHUNK:.+]] = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, i1, f32, f32)
// The K block (32 keys x 64) is packed transposed into f32, 16 x 16 at a
// time, with shuffles (no per-element copies).
// CHECK: scf.for {{.+}} -> (tensor<64x32xf32>)
// CHECK: vector.transfer_read {{.+}} : tensor<16x16xbf16>, vector<16x16xbf16>
// CHECK: vector.shuffle
// CHECK: arith.extf {{.+}} : vector<16x16xbf16> to vector<16x16xf32>
// S = Q Kᵀ in 8 x 32 register tiles, 32 reduction steps unrolled per
// iteration of a depth loop: 8 rows x 32 steps of vector<32> FMAs. The
// loop carries the accumulators as a vector (written after it), not
// through the score tile. They start as zeros in registers, and the tiles
// write into an uninitialized tensor: no zero-filled tile is read (shared
// with the loop's initial state, it was copied every key block).
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<32x32xf32>
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c32 step %c8 iter_args(%{{.+}} = %[[EMPTY]]) -> (tensor<32x32xf32>)
// CHECK-NEXT: tensor.extract_slice
// CHECK-NEXT: %[[A:.+]] = scf.for %{{.+}} = %c0 to %c64 step %c32 iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK-COUNT-256: vector.fma {{.+}} : vector<32xf32>
// CHECK-NOT: vector.fma
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield %{{.+}} : vector<8x32xf32>
// CHECK: vector.transfer_write %[[A]], {{.+}} : vector<8x32xf32>, tensor<8x32xf32>
// The rescaling of (chunk, acc, accc), row by row, only where needed.
// CHECK: %[[RESCALED:.+]]:3 = scf.if
// CHECK-NEXT: scf.for {{.+}} iter_args(%{{.+}} = %[[CHUNK]], %{{.+}} = %[[ACC]], %{{.+}} = %[[ACCC]])
// The V block is extended to f32 once (16 x 16 at a time, no transpose),
// then P V (32 keys: one depth step) runs in 8 x 32 register tiles, onto
// the chunk: each tile sums its keys from zero and adds the chunk's tile
// once (markSumFromZero), one rounding a block.
// CHECK: scf.for {{.+}} -> (tensor<32x32xf32>)
// CHECK-NOT: vector.shuffle
// CHECK: arith.extf {{.+}} : vector<16x16xbf16> to vector<16x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c8 iter_args(%{{.+}} = %[[RESCALED]]#0)
// CHECK: vector.fma %{{.+}}, %{{.+}}, %[[ZERO32]] : vector<32xf32>
// CHECK-COUNT-255: vector.fma {{.+}} : vector<32xf32>
// CHECK-NOT: vector.fma
// CHECK: %[[START:.+]] = vector.transfer_read {{.+}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK-NEXT: %[[TOTAL:.+]] = arith.addf %{{.+}}, %[[START]] : vector<8x32xf32>
// CHECK-NEXT: vector.transfer_write %[[TOTAL]]
// The compensated update of (acc, accc) by the chunk, row by row, in the
// blocks that end one.
// CHECK: scf.if
// CHECK-NEXT: scf.for {{.+}} iter_args(%{{.+}} = %[[RESCALED]]#1, %{{.+}} = %[[RESCALED]]#2) -> (tensor<32x32xf32>, tensor<32x32xf32>)
// CHECK: scf.yield %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, i1, f32, f32
// CHECK: tensor.parallel_insert_slice
func.func @gqa_causal_bf16(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x1x64x64xbf16>,
                           %v: tensor<1x1x64x32xbf16>, %g: tensor<1x2x64x32xbf16>) -> tensor<1x2x64x32xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x32xbf16>, tensor<1x2x64x32xbf16>) -> tensor<1x2x64x32xbf16>
  return %0 : tensor<1x2x64x32xbf16>
}

// -----

// Linalg ops in a user's own scf.forall (not made by gated-attention-tile)
// are left alone.
// CHECK-LABEL: func.func @user_forall
// CHECK: scf.forall
// CHECK: linalg.generic
// CHECK-NOT: vector.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @user_forall(%x: tensor<4x64x64xf32>) -> tensor<4x64x64xf32> {
  %0 = scf.forall (%i) in (4) shared_outs(%o = %x) -> (tensor<4x64x64xf32>) {
    %s = tensor.extract_slice %x[%i, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<4x64x64xf32> to tensor<64x64xf32>
    %e = tensor.empty() : tensor<64x64xf32>
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %a : f32
      linalg.yield %m : f32
    } -> tensor<64x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %o[%i, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<64x64xf32> into tensor<4x64x64xf32>
    }
  }
  return %0 : tensor<4x64x64xf32>
}
