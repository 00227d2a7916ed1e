// RUN: gated-attention-opt %s --gated-attention-tile="query-block=64 key-block=48" \
// RUN:   --canonicalize --cse \
// RUN:   --gated-attention-vectorize-tiles="register-rows=6 register-cols=32" \
// RUN:   --canonicalize --cse | FileCheck %s --implicit-check-not=linalg.
// RUN: gated-attention-opt %s --gated-attention-tile="query-block=64 key-block=48" \
// RUN:   --canonicalize --cse \
// RUN:   --gated-attention-vectorize-tiles="register-rows=6 register-cols=32 register-depth=0" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=NODEPTH --implicit-check-not=linalg.
// RUN: gated-attention-opt %s --gated-attention-tile="query-block=64 key-block=48" \
// RUN:   --canonicalize --cse \
// RUN:   --gated-attention-vectorize-tiles="register-rows=0 register-cols=0 register-depth=0" \
// RUN:   | FileCheck %s --check-prefix=UNTILED

// Register tiles that do not divide what they tile: 6 rows over 64 (60 +
// 4), 32 columns over 48 keys (32 + 16) and Dv 40 (32 + 8), 32 reduction
// steps over D 80 (64 + 16). Each remainder is split off into a static tile
// of its own, so every contraction is vectorized (a dynamic remainder tile
// was left as a linalg op, which ran element by element: D 80 at 1.2
// GFLOP/s on a core that does 87 with the split).
// CHECK-LABEL: func.func @remainders
// S = Q Kᵀ: the first 60 rows in 6 x 32 tiles, a depth loop over 64 of D's
// 80 steps carrying the accumulators, then the last 16 steps. The parts
// that begin the sum start from zeros in registers and write into
// uninitialized tensors; the last 16 steps go on from the first part's sums.
// CHECK-DAG: %[[Z4:.+]] = arith.constant dense<0.000000e+00> : vector<4x32xf32>
// CHECK-DAG: %[[Z6:.+]] = arith.constant dense<0.000000e+00> : vector<6x32xf32>
// CHECK: %[[E:.+]] = tensor.empty() : tensor<60x32xf32>
// CHECK-NEXT: %[[S:.+]] = scf.for %{{.+}} = %c0 to %c60 step %c6 iter_args(%{{.+}} = %[[E]]) -> (tensor<60x32xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c32 iter_args(%{{.+}} = %[[Z6]]) -> (vector<6x32xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c60 step %c6 iter_args(%{{.+}} = %[[S]]) -> (tensor<60x32xf32>)
// The last 16 keys.
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c32 iter_args({{.+}}) -> (vector<6x16xf32>)
// The last 4 rows.
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c32 iter_args(%{{.+}} = %[[Z4]]) -> (vector<4x32xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c32 iter_args({{.+}}) -> (vector<4x16xf32>)
// P V: the last 8 of Dv's 40 columns.
// CHECK: vector.transfer_write {{.+}} : vector<6x8xf32>, tensor<6x8xf32>
// CHECK: tensor.parallel_insert_slice
// Without depth loops (register-depth=0) a tile reads its accumulators
// from S, which S's own fill first writes row by row.
// NODEPTH-LABEL: func.func @remainders
// NODEPTH: %[[E:.+]] = tensor.empty() : tensor<64x48xf32>
// NODEPTH-NEXT: %[[F:.+]] = scf.for %{{.+}} = %c0 to %c64 step %c1 iter_args(%{{.+}} = %[[E]]) -> (tensor<64x48xf32>)
// NODEPTH: vector.transfer_write %{{.+}} : vector<1x48xf32>, tensor<1x48xf32>
// NODEPTH: tensor.extract_slice %[[F]][0, 0] [60, 48]
// NODEPTH: scf.for %{{.+}} = %c0 to %c60 step %c6
// NODEPTH: vector.transfer_read {{.+}} : tensor<6x32xf32>, vector<6x32xf32>
// With no register tiles at all (every size 0) the contractions are
// vectorized whole and read their fills, which stay: S reads the rows its
// fill wrote (an erased fill left it reading an uninitialized tensor).
// UNTILED-LABEL: func.func @remainders
// UNTILED: %[[E:.+]] = tensor.empty() : tensor<64x48xf32>
// UNTILED-NEXT: %[[F:.+]] = scf.for %{{.+}} = %c0 to %c64 step %c1 iter_args(%{{.+}} = %[[E]]) -> (tensor<64x48xf32>)
// UNTILED: vector.transfer_read %[[F]][%c0, %c0], %{{.+}} : tensor<64x48xf32>, vector<64x48xf32>
func.func @remainders(%q: tensor<1x2x64x80xf32>, %k: tensor<1x2x48x80xf32>,
                      %v: tensor<1x2x48x40xf32>, %g: tensor<1x2x64x40xf32>) -> tensor<1x2x64x40xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x2x64x80xf32>, tensor<1x2x48x80xf32>, tensor<1x2x48x40xf32>, tensor<1x2x64x40xf32>) -> tensor<1x2x64x40xf32>
  return %0 : tensor<1x2x64x40xf32>
}
