// RUN: gated-attention-opt %s --gated-attention-tile --canonicalize --cse --split-input-file > %t
// No tensor of Sq x Skv (100 x 130) scores exists anywhere:
// RUN: FileCheck %s --input-file=%t '--implicit-check-not=x130xf32>' --implicit-check-not=100x130
// RUN: FileCheck %s --input-file=%t --check-prefix=NOMASK
// RUN: gated-attention-opt %s --gated-attention-tile="query-block=32 key-block=32" --canonicalize --cse --split-input-file > %t.b32
// RUN: FileCheck %s --input-file=%t.b32 --check-prefix=B32
// RUN: FileCheck %s --input-file=%t.b32 --check-prefix=ALIGNED

// GQA 8/2, causal, Sq = 100 and Skv = 130 (neither a multiple of 64).

// CHECK-DAG: #[[ROWS:.+]] = affine_map<(d0) -> (-d0 + 100, 16)>
// CHECK-DAG: #[[KVHEAD:.+]] = affine_map<(d0) -> (d0 floordiv 4)>
// CHECK-DAG: #[[KEYS:.+]] = affine_map<(d0, d1) -> (0, d0 + d1 + 30)>
// CHECK-LABEL: func.func @gqa_causal
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<1x8x100x32xf32>, %[[K:[a-z0-9]+]]: tensor<1x2x130x32xf32>, %[[V:[a-z0-9]+]]: tensor<1x2x130x16xf32>, %[[G:[a-z0-9]+]]: tensor<1x8x100x16xf32>)
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 0.176776692 : f32
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// One parallel iteration per (GQA group of 4 heads, block of 16 query rows):
// the group's heads share one 64-row query tile and every K/V block (the
// batch's one iteration stays a loop of the mapped tile grid).
// CHECK: %[[RES:.+]] = scf.forall (%{{.+}}, %[[H:.+]], %[[Q0:.+]]) = (0, 0, 0) to (1, 8, 100) step (1, 4, 16) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<1x8x100x16xf32>)
// CHECK: %[[NROWS:.+]] = affine.min #[[ROWS]](%[[Q0]])
// K/V come from head h / 4 and, under the causal mask, only keys
// [0, q0 + rows + Skv - Sq) are read: later blocks are never visited.
// CHECK: %[[KVH:.+]] = affine.apply #[[KVHEAD]](%[[H]])
// CHECK: %[[NKEYS:.+]] = affine.max #[[KEYS]](%[[Q0]], %[[NROWS]])
// CHECK: %[[KS:.+]] = tensor.extract_slice %[[K]][0, %[[KVH]], 0, 0] [1, 1, %[[NKEYS]], 32]
// CHECK: %[[VS:.+]] = tensor.extract_slice %[[V]][0, %[[KVH]], 0, 0] [1, 1, %[[NKEYS]], 16]
// CHECK: %[[OFF:.+]] = arith.subi %[[NKEYS]], %[[NROWS]] : index
// The query tile: each head's rows padded to 16 and scaled once, in f32,
// into their place in the stacked tile (no stacked copy of the query).
// CHECK: %[[QS0:.+]] = tensor.extract_slice %[[QE:.+]][0, 0] [16, 32] [1, 1] : tensor<64x32xf32> to tensor<16x32xf32>
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<16x32xf32>) outs(%[[QS0]] : tensor<16x32xf32>)
// CHECK: arith.mulf %{{.+}}, %[[SCALE]]
// CHECK: tensor.insert_slice %{{.+}} into %[[QE]][0, 0] [16, 32]
// CHECK: tensor.insert_slice %{{.+}}[16, 0] [16, 32]
// CHECK: tensor.insert_slice %{{.+}}[32, 0] [16, 32]
// CHECK: %[[QT:.+]] = tensor.insert_slice %{{.+}}[48, 0] [16, 32] [1, 1] : tensor<16x32xf32> into tensor<64x32xf32>
// Running max (-inf), sum and its compensation (0), each in a buffer of
// its own (alloc_tensor: CSE would give equal fills of a tensor.empty one
// buffer, and bufferization a copy of it per use); the compensated
// accumulator and its compensation start undefined (the first chunk
// replaces them), the chunk at 0.
// CHECK: %[[M0:.+]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.+}} : tensor<64xf32>)
// CHECK: %[[L0E:.+]] = bufferization.alloc_tensor() : tensor<64xf32>
// CHECK: %[[L0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[L0E]] : tensor<64xf32>)
// CHECK: %[[LC0E:.+]] = bufferization.alloc_tensor() : tensor<64xf32>
// CHECK: %[[LC0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[LC0E]] : tensor<64xf32>)
// CHECK: %[[ACC0:.+]] = bufferization.alloc_tensor() : tensor<64x16xf32>
// CHECK-NEXT: %[[ACCC0:.+]] = bufferization.alloc_tensor() : tensor<64x16xf32>
// CHECK-NEXT: %[[CH0E:.+]] = bufferization.alloc_tensor() : tensor<64x16xf32>
// CHECK-NEXT: %[[CH0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[CH0E]] : tensor<64x16xf32>)
// Loop 1: the full blocks row 0 already sees; no mask code (NOMASK checks
// the whole loop body: from the first scf.for to its scf.yield).
// NOMASK-LABEL: func.func @gqa_causal
// NOMASK: scf.for %{{.+}} = %c0 to
// NOMASK-NOT: linalg.index
// NOMASK-NOT: tensor.insert_slice
// NOMASK: scf.yield
// CHECK: %[[UNMASKED:.+]] = arith.muli
// CHECK: %[[LOOP1:.+]]:9 = scf.for %[[KB:.+]] = %{{.+}} to %[[UNMASKED]] step %{{.+}} iter_args(%[[M:.+]] = %[[M0]], %[[L:.+]] = %[[L0]], %[[LC:.+]] = %[[LC0]], %[[ACC:.+]] = %[[ACC0]], %[[ACCC:.+]] = %[[ACCC0]], %[[CHUNK:.+]] = %[[CH0]], %[[FOLDED:.+]] = %false, %[[VMAX:.+]] = %{{.+}}, %[[SIGMA:.+]] = %{{.+}}) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, i1, f32, f32)
// CHECK: %[[KT:.+]] = tensor.extract_slice %[[KS]][0, 0, %[[KB]], 0] [1, 1, 64, 32] [1, 1, 1, 1] : tensor<1x1x?x32xf32> to tensor<64x32xf32>
// CHECK: %[[VT:.+]] = tensor.extract_slice %[[VS]][0, 0, %[[KB]], 0] [1, 1, 64, 16] [1, 1, 1, 1] : tensor<1x1x?x16xf32> to tensor<64x16xf32>
// S = Q Kᵀ
// CHECK: %[[S:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[QT]], %[[KT]] : tensor<64x32xf32>, tensor<64x32xf32>) outs(%{{.+}} : tensor<64x64xf32>)
// rowmax S, dropping NaN scores (their rows stay NaN through P)
// CHECK: %[[BMAX:.+]] = linalg.generic {{.+}} ins(%[[S]] : tensor<64x64xf32>)
// CHECK: arith.maxnumf
// max |v| so far, and the weights' scale sigma from it.
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%[[VT]] : tensor<64x16xf32>) outs(%{{.+}} : tensor<16xi32>)
// CHECK: arith.maxui
// CHECK: arith.maxui
// CHECK: arith.bitcast %{{.+}} : i32 to f32
// CHECK: arith.maximumf %[[VMAX]], %{{.+}} : f32
// CHECK: %[[SIGMAN:.+]] = arith.bitcast %{{.+}} : i32 to f32
// CHECK: %[[FIELD:.+]] = arith.andi %{{.+}}, %c255_i32 : i32
// P = exp(S - m') sigma', m' = m unless rowmax S exceeds it by 8 ln 2
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[M]], %[[BMAX]] : tensor<64xf32>, tensor<64xf32>) outs(%[[S]] : tensor<64x64xf32>)
// (exp: buildWeightExp, sigma' = 2^k added to 2^n's exponent field, 0
// where n + k <= -127)
// CHECK: arith.cmpf ogt
// CHECK: arith.addi %{{.+}}, %[[FIELD]] : i32
// CHECK: arith.shli
// CHECK: arith.cmpf olt
// CHECK-NEXT: %[[PW:.+]] = arith.select
// CHECK-NEXT: linalg.yield %[[PW]] : f32
// alpha = exp(m - m') sigma' / sigma
// CHECK: %[[ALPHA:.+]] = linalg.generic {{.+}} ins(%[[M]], %[[BMAX]] : tensor<64xf32>, tensor<64xf32>)
// CHECK: arith.shli
// The sums are rescaled only when some row that saw a key has alpha != 1.
// CHECK: %[[MOVED:.+]] = linalg.generic {{.+}} ins(%[[ALPHA]], %[[M]] : tensor<64xf32>, tensor<64xf32>) outs(%{{.+}} : tensor<i1>)
// CHECK: %[[ANY:.+]] = tensor.extract %[[MOVED]][]
// CHECK: %[[MN:.+]] = linalg.generic {{.+}} ins(%[[BMAX]] : tensor<64xf32>) outs(%[[M]] : tensor<64xf32>)
// (l, lc) += rowsum P, compensated: rowsum P summed onto -alpha lc, then
// added to alpha l
// CHECK: %[[LY0:.+]] = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<64xf32>) outs(%[[LC]] : tensor<64xf32>)
// CHECK: %[[LY:.+]] = linalg.generic {{.+}} ins(%[[P]] : tensor<64x64xf32>) outs(%[[LY0]] : tensor<64xf32>)
// CHECK: %[[LN:.+]]:2 = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<64xf32>) outs(%[[L]], %[[LY]] : tensor<64xf32>, tensor<64xf32>)
// P V is summed plainly onto the chunk, which the block that ends a chunk
// of 1024 keys adds to (acc, accc) with compensation.
// CHECK: %[[RESCALED:.+]]:3 = scf.if %[[ANY]]
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<64xf32>) outs(%[[CHUNK]], %[[ACC]], %[[ACCC]] :
// CHECK: %[[PV:.+]] = linalg.generic {{.+}} ins(%[[P]], %[[VT]] : tensor<64x64xf32>, tensor<64x16xf32>) outs(%[[RESCALED]]#0 : tensor<64x16xf32>)
// CHECK: %[[FOLD:.+]]:3 = scf.if
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[PV]] : tensor<64x16xf32>) outs(%[[RESCALED]]#1, %[[RESCALED]]#2 :
// CHECK: scf.yield %[[MN]], %[[LN]]#0, %[[LN]]#1, %[[FOLD]]#1, %[[FOLD]]#2, %[[FOLD]]#0, %{{.+}}, %{{.+}}, %[[SIGMAN]]
// The diagonal in blocks of 32 keys (diagonal-key-block: half the 16 rows
// per head, at least 32). Loop 2: the whole ones row 0 sees, unmasked.
// CHECK: %[[UNMASKED32:.+]] = arith.muli %{{.+}}, %c32
// CHECK: %[[LOOP2:.+]]:9 = scf.for %{{.+}} = %[[UNMASKED]] to %[[UNMASKED32]] step %c32 iter_args(%{{.+}} = %[[LOOP1]]#0, %{{.+}} = %[[LOOP1]]#1, %{{.+}} = %[[LOOP1]]#2, %{{.+}} = %[[LOOP1]]#3, %{{.+}} = %[[LOOP1]]#4, %{{.+}} = %[[LOOP1]]#5, %{{.+}} = %[[LOOP1]]#6, %{{.+}} = %[[LOOP1]]#7, %{{.+}} = %[[LOOP1]]#8)
// CHECK: tensor.extract_slice %[[KS]][0, 0, %{{.+}}, 0] [1, 1, 32, 32] [1, 1, 1, 1] : tensor<1x1x?x32xf32> to tensor<32x32xf32>
// CHECK-NOT: linalg.index
// CHECK: scf.yield
// Loop 3: blocks on the diagonal or past the last key, padded and masked.
// CHECK: %[[LOOP3:.+]]:9 = scf.for %[[KB2:.+]] = %[[UNMASKED32]] to %[[NKEYS]] step %c32 iter_args(%{{.+}} = %[[LOOP2]]#0, %{{.+}} = %[[LOOP2]]#1, %{{.+}} = %[[LOOP2]]#2, %{{.+}} = %[[LOOP2]]#3, %{{.+}} = %[[LOOP2]]#4, %{{.+}} = %[[LOOP2]]#5, %{{.+}} = %[[LOOP2]]#6, %{{.+}} = %[[LOOP2]]#7, %{{.+}} = %[[LOOP2]]#8)
// CHECK: %[[KZ:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<32x32xf32>)
// CHECK: tensor.insert_slice %{{.+}} into %[[KZ]][0, 0] [%{{.+}}, 32] [1, 1] : tensor<?x32xf32> into tensor<32x32xf32>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%{{.+}}, 16] [1, 1] : tensor<?x16xf32> into tensor<32x16xf32>
// CHECK: linalg.generic
// CHECK: %[[I:.+]] = linalg.index 0
// CHECK: %[[ROW:.+]] = arith.remui %[[I]], %c16
// CHECK: %[[J:.+]] = linalg.index 1
// CHECK: %[[KEY:.+]] = arith.addi %[[KB2]], %[[J]]
// CHECK: arith.cmpi slt, %[[KEY]], %[[NKEYS]]
// CHECK: %[[LAST:.+]] = arith.addi %[[ROW]], %[[OFF]]
// CHECK: arith.cmpi sle, %[[KEY]], %[[LAST]]
// CHECK: arith.select %{{.+}}, %{{.+}}, %[[NEGINF]]
// CHECK: scf.yield
// After the loops acc - accc + chunk, where a chunk was folded, is the
// sum. Epilogue: 1/(l - lc) (0 for rows without keys), then
// Y = acc / (l - lc) times sigmoid(G), once.
// CHECK: %[[TOTAL:.+]] = scf.if %[[LOOP3]]#6
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[LOOP3]]#3, %[[LOOP3]]#4 : tensor<64x16xf32>, tensor<64x16xf32>) outs(%[[LOOP3]]#5 : tensor<64x16xf32>)
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[LOOP3]]#5
// CHECK: %[[INV:.+]] = linalg.generic {{.+}} ins(%[[LOOP3]]#1, %[[LOOP3]]#2 : tensor<64xf32>, tensor<64xf32>)
// CHECK: %[[ROWSUM:.+]] = arith.subf
// CHECK: %[[EMPTY:.+]] = arith.cmpf oeq, %[[ROWSUM]], %[[ZERO:[a-z0-9_]+]] : f32
// CHECK: %[[RCP:.+]] = arith.divf %{{.+}}, %[[ROWSUM]] : f32
// CHECK: arith.select %[[EMPTY]], %[[ZERO]], %[[RCP]] : f32
// One generic a head r: rows [16 r, 16 r + 16) of the state, its own gate
// rows, and its output rows alone, which bufferization writes in place in
// the result (no stacked output tile copied out head by head).
// CHECK: %[[A0:.+]] = tensor.extract_slice %[[TOTAL]][0, 0] [16, 16]
// CHECK: %[[I0:.+]] = tensor.extract_slice %[[INV]][0] [16]
// CHECK: %[[G0:.+]] = tensor.extract_slice %{{.+}}[0, 0, 0, 0] [1, 1, %[[NROWS]], 16]
// CHECK: %[[Y0:.+]] = linalg.generic {{.+}} ins(%[[A0]], %[[I0]], %{{.+}} : tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>) outs(%{{.+}} : tensor<16x16xf32>)
// CHECK: arith.mulf
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK: tensor.extract_slice %[[TOTAL]][16, 0] [16, 16]
// CHECK: %[[Y1:.+]] = linalg.generic
// CHECK: tensor.extract_slice %[[TOTAL]][32, 0] [16, 16]
// CHECK: %[[Y2:.+]] = linalg.generic
// CHECK: tensor.extract_slice %[[TOTAL]][48, 0] [16, 16]
// CHECK: %[[Y3:.+]] = linalg.generic
// Head r's first `rows` rows go to the group's output.
// CHECK: tensor.extract_slice %[[Y0]][0, 0] [%[[NROWS]], 16]
// CHECK: tensor.extract_slice %[[Y1]][0, 0] [%[[NROWS]], 16]
// CHECK: tensor.extract_slice %[[Y2]][0, 0] [%[[NROWS]], 16]
// CHECK: tensor.extract_slice %[[Y3]][0, 0] [%[[NROWS]], 16]
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[OUT]][0, %[[H]], %[[Q0]], 0] [1, 4, %[[NROWS]], 16]
// The loop is marked for the later CPU vectorization; under the causal mask
// later query blocks see more keys, so their loop is marked growing.
// CHECK: } {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>, #gated_attention.tile<2, growing>]}
// CHECK: return %[[RES]]
func.func @gqa_causal(%q: tensor<1x8x100x32xf32>, %k: tensor<1x2x130x32xf32>,
                      %v: tensor<1x2x130x16xf32>, %g: tensor<1x8x100x16xf32>) -> tensor<1x8x100x16xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x8x100x32xf32>, tensor<1x2x130x32xf32>, tensor<1x2x130x16xf32>, tensor<1x8x100x16xf32>) -> tensor<1x8x100x16xf32>
  return %0 : tensor<1x8x100x16xf32>
}

// -----

// Not causal, static multiples of the blocks: all key blocks are full and
// unmasked; no padding anywhere. Headwise shared gate, SiLU, add, bf16:
// K/V tiles are extended inside the contractions, the result truncated once.

// B32-DAG: #[[GMAP:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// B32-LABEL: func.func @aligned_headwise_bf16
// ALIGNED-LABEL: func.func @aligned_headwise_bf16
// ALIGNED-NOT: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [
// ALIGNED-NOT: linalg.index
// ALIGNED: return
// B32: scf.forall (%[[B:.+]], %[[H:.+]], %[[Q0:.+]]) = (0, 0, 0) to (2, 4, 128) step (1, 1, 32)
// B32: scf.for %{{.+}} = %c0 to %c96 step %c32
// B32: arith.extf %{{.+}} : bf16 to f32
// B32: scf.yield
// The masked loop would only handle a tail: it is empty (96 % 32 == 0) and
// folded away.
// B32-NOT: scf.for
// B32-NOT: linalg.index
// B32: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #[[GMAP]], #{{.+}}]
// B32: %[[Y:.+]] = arith.mulf
// B32: arith.negf
// B32: %[[SIG:.+]] = arith.divf
// B32: %[[SILU:.+]] = arith.mulf %{{.+}}, %[[SIG]] : f32
// B32: %[[SUM:.+]] = arith.addf %[[Y]], %[[SILU]] : f32
// B32: arith.truncf %[[SUM]] : f32 to bf16
// B32: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[H]], %[[Q0]], 0] [1, 1, 32, 8]
// Without the mask every tile sees every key: no loop is growing.
// B32-NOT: growing
// B32: } {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>, #gated_attention.tile<2>]}
func.func @aligned_headwise_bf16(%q: tensor<2x4x128x16xbf16>, %k: tensor<2x4x96x16xbf16>,
                                 %v: tensor<2x4x96x8xbf16>, %g: tensor<2x1x128x1xbf16>) -> tensor<2x4x128x8xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g {gate = #gated_attention.gate<silu>, combine = #gated_attention.combine<add>}
      : (tensor<2x4x128x16xbf16>, tensor<2x4x96x16xbf16>, tensor<2x4x96x8xbf16>, tensor<2x1x128x1xbf16>) -> tensor<2x4x128x8xbf16>
  return %0 : tensor<2x4x128x8xbf16>
}
