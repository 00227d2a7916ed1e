// RUN: gated-attention-opt %s --gated-attention-tile --canonicalize --cse | FileCheck %s
// The paged op's tiles keep one block size: diagonal-key-block (of dense
// causal ops) is not checked against its blocks, nor used.
// RUN: gated-attention-opt %s --gated-attention-tile=diagonal-key-block=48 --canonicalize --cse | FileCheck %s

// Paged attention tiled in place: one scf.forall over (ceildiv(T, R') + B
// tiles, head groups) for the whole batch; a tile finds its sequence by a
// binary search for the last sequence that starts at or before it (no loop
// over all B sequences per tile: that made the batch quadratic in B); K/V
// blocks come from
// the pages through the block table, never from a gathered copy of the
// sequence. Hq 4 over Hkv 2: 2 heads stacked, R' = 64 / 2 = 32 rows each.
// 528-token pages (= 16 x 33): a 64-key block spans pages, so it is built
// from 4 pieces of 16 keys, each within one page.
// CHECK-LABEL: func.func @pages_528
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<?x4x64xf32>, %[[KC:[^:]+]]: tensor<?x528x2x64xf32>, %[[VC:[^:]+]]: tensor<?x528x2x64xf32>, %[[T:[^:]+]]: tensor<?x?xi32>, %[[L:[^:]+]]: tensor<?xi32>, %[[CU:[^:]+]]: tensor<?xi32>, %[[G:[^:]+]]: tensor<?x4x1xf32>)
// CHECK-NOT:     gated_attention.paged_attention
// CHECK:         %[[TOKENS:.+]] = tensor.dim %[[Q]], %c0
// CHECK:         %[[B:.+]] = tensor.dim %[[L]], %c0
// CHECK:         %[[BLOCKS:.+]] = arith.ceildivui %[[TOKENS]], %c32
// CHECK:         %[[TILES:.+]] = arith.addi %[[BLOCKS]], %[[B]]
// CHECK:         scf.forall (%[[TILE:.+]], %[[GROUP:.+]]) in (%[[TILES]], 2) shared_outs(%[[OUT:.+]] = %{{.+}})
// The sequence: sequence s >= 1 starts at tile cu[s] / 32 + s; the search
// keeps lo (starts at or before the tile) and hi (after it, or B).
// CHECK-NOT:       scf.for
// CHECK:           %[[HI0:.+]] = arith.maxui %[[B]], %c1
// CHECK:           %[[SEARCH:.+]]:2 = scf.while (%[[LO:.+]] = %c0, %[[HI:.+]] = %[[HI0]])
// CHECK:             %[[GAP:.+]] = arith.subi %[[HI]], %[[LO]]
// CHECK:             %[[MORE:.+]] = arith.cmpi ugt, %[[GAP]], %c1
// CHECK:             scf.condition(%[[MORE]]) %[[LO]], %[[HI]]
// CHECK:           } do {
// CHECK:           ^bb0(%[[LO:.+]]: index, %[[HI:.+]]: index):
// CHECK:             %[[HALF:.+]] = arith.shrui %{{.+}}, %c1
// CHECK:             %[[MID:.+]] = arith.addi %[[LO]], %[[HALF]]
// CHECK:             tensor.extract %[[CU]][%[[MID]]]
// CHECK:             %[[START:.+]] = arith.addi %{{.+}}, %[[MID]]
// CHECK:             %[[AT:.+]] = arith.cmpi ule, %[[START]], %[[TILE]]
// CHECK:             %[[NLO:.+]] = arith.select %[[AT]], %[[MID]], %[[LO]]
// CHECK:             %[[NHI:.+]] = arith.select %[[AT]], %[[HI]], %[[MID]]
// CHECK:             scf.yield %[[NLO]], %[[NHI]]
// CHECK:           }
// CHECK-NOT:       scf.for
// Its length, then a decode tile (one query) or a full one.
// CHECK:           tensor.extract %[[L]][%[[SEARCH]]#0]
// CHECK:           scf.if %{{.+}} -> (tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK:             tensor.extract_slice %[[Q]][%[[ROW:.+]], %{{.+}}, 0] [%[[COUNT:.+]], 1, 64] [1, 1, 1] : tensor<?x4x64xf32> to tensor<?x64xf32>
// CHECK:             tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%{{.+}}, 64] [1, 1] : tensor<?x64xf32> into tensor<1x64xf32>
// CHECK:             scf.for %[[KB:.+]] = %c0 to %{{.+}} step %c64 iter_args({{.+}}) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>, i1, f32, f32)
// CHECK:               scf.for %[[PIECE:.+]] = %c0 to %c4 step %c1 iter_args(%[[BLK:.+]] = %{{.+}}) -> (tensor<64x64xf32>)
// CHECK:                 %[[OFF:.+]] = arith.muli %[[PIECE]], %c16
// CHECK:                 %[[KEY:.+]] = arith.addi %[[KB]], %[[OFF]]
// CHECK:                 %[[PI:.+]] = arith.divui %[[KEY]], %c528
// CHECK:                 %[[PAGE:.+]] = tensor.extract %[[T]][%[[SEARCH]]#0, %[[PI]]]
// CHECK:                 %[[PID:.+]] = arith.index_cast %[[PAGE]]
// CHECK:                 %[[SLOT:.+]] = arith.remui %[[KEY]], %c528
// CHECK:                 %[[KEYS:.+]] = tensor.extract_slice %[[KC]][%[[PID]], %[[SLOT]], %{{.+}}, 0] [1, 16, 1, 64] [1, 1, 1, 1] : tensor<?x528x2x64xf32> to tensor<16x64xf32>
// CHECK:                 tensor.insert_slice %[[KEYS]] into %[[BLK]][%[[OFF]], 0] [16, 64] [1, 1]
// CHECK:               scf.for
// CHECK:                 tensor.extract_slice %[[VC]]
// CHECK:             } else {
// CHECK:             tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%{{.+}}, 64] [1, 1] : tensor<?x64xf32> into tensor<32x64xf32>
// CHECK:             -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, i1, f32, f32)
// The last, partial block: pieces only up to the sequence's length (the
// rest of the block is zeros: the NaN slots of test/python/paged.py).
// CHECK:               %[[PIECES:.+]] = arith.ceildivui
// CHECK:               scf.for %{{.+}} = %c0 to %[[PIECES]] step %c1
// CHECK:                 %[[ROWS:.+]] = arith.minui %{{.+}}, %c16
// CHECK:                 tensor.extract_slice %[[KC]][%{{.+}}, %{{.+}}, %{{.+}}, 0] [1, %[[ROWS]], 1, 64]
// Each head's rows go back token-major.
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[ROW]], %{{.+}}, 0] [%[[COUNT]], 1, 64] [1, 1, 1]
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[ROW]], %{{.+}}, 0] [%[[COUNT]], 1, 64] [1, 1, 1]
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
func.func @pages_528(%q: tensor<?x4x64xf32>, %kc: tensor<?x528x2x64xf32>, %vc: tensor<?x528x2x64xf32>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>, %g: tensor<?x4x1xf32>) -> tensor<?x4x64xf32> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu, %g {causal, gate = #gated_attention.gate<silu>} : (tensor<?x4x64xf32>, tensor<?x528x2x64xf32>, tensor<?x528x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x4x1xf32>) -> tensor<?x4x64xf32>
  return %r : tensor<?x4x64xf32>
}

// 64-token pages hold whole 64-key blocks: each block is one slice of its
// page, with no piece loop; K and V share the page lookup. MQA (8 heads over
// 1): all 8 stacked, R' = 8.
// CHECK-LABEL: func.func @pages_64
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<?x8x32xbf16>, %[[KC:[^:]+]]: tensor<?x64x1x32xbf16>, %[[VC:[^:]+]]: tensor<?x64x1x32xbf16>, %[[T:[^:]+]]: tensor<?x?xi32>
// CHECK:         %[[TILES:.+]] = arith.ceildivui %{{.+}}, %c8
// CHECK:         scf.forall (%{{.+}}) in (%{{.+}}) shared_outs
// One output a stacked head:
// CHECK:           scf.if %{{.+}} -> (tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>)
// (bf16: acc summed in chunks, OnlineSoftmaxTile::chunkedAcc.)
// CHECK:             scf.for %[[KB:.+]] = %c0 to %{{.+}} step %c64 iter_args({{.+}}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, i1, f32, f32)
// CHECK-NOT:           scf.for
// CHECK:               %[[PI:.+]] = arith.divui %[[KB]], %c64
// CHECK:               %[[PAGE:.+]] = tensor.extract %[[T]][%{{.+}}, %[[PI]]]
// CHECK:               %[[PID:.+]] = arith.index_cast %[[PAGE]]
// CHECK:               %[[SLOT:.+]] = arith.remui %[[KB]], %c64
// CHECK:               tensor.extract_slice %[[KC]][%[[PID]], %[[SLOT]], 0, 0] [1, 64, 1, 32] [1, 1, 1, 1] : tensor<?x64x1x32xbf16> to tensor<64x32xbf16>
// CHECK:               tensor.extract_slice %[[VC]][%[[PID]], %[[SLOT]], 0, 0] [1, 64, 1, 32] [1, 1, 1, 1] : tensor<?x64x1x32xbf16> to tensor<64x32xbf16>
// CHECK:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
func.func @pages_64(%q: tensor<?x8x32xbf16>, %kc: tensor<?x64x1x32xbf16>, %vc: tensor<?x64x1x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x8x32xbf16> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<?x8x32xbf16>, tensor<?x64x1x32xbf16>, tensor<?x64x1x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x32xbf16>
  return %r : tensor<?x8x32xbf16>
}
