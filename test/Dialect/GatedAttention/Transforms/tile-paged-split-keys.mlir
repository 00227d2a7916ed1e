// Split-KV of the paged op (kv-splits): a forall over (part, tile, head
// group) writes each part's f32 partials into rows indexed by query token
// ([N, T, Hq(, Dv)]), then a merge over (T, Hq) outside it applies the gate
// once. Hq 8 over Hkv 2 (4 heads stacked, 16 rows each), 16-token pages.
// RUN: gated-attention-opt %s --gated-attention-tile="kv-splits=3" --canonicalize --cse | FileCheck %s --check-prefix=FORCED
// auto counting 16 threads: min(T, ceildiv(T, 16) + B) x 2 tiles and the
// longest sequence (a loop over seq_lens) decide at run time.
// RUN: gated-attention-opt %s --gated-attention-tile="kv-splits=auto threads=16" --canonicalize --cse | FileCheck %s --check-prefix=AUTO
// RUN: gated-attention-opt %s --gated-attention-tile="kv-splits=1" --canonicalize --cse | FileCheck %s --check-prefix=OFF

// Part i of a tile's keys: [i c, min((i + 1) c, keys)), c = ceildiv(
// ceildiv(keys, 3), 64) x 64; each stacked head's rows [count] go to
// tokens [row, + count) of its head in part i's partials.
// FORCED-LABEL: func.func @paged
// FORCED-SAME:    %[[G:[^:]+]]: tensor<?x8x64xf32>)
// FORCED:         %[[T:.+]] = tensor.dim %arg0, %c0
// FORCED:         %[[OUTS:.+]] = tensor.empty(%[[T]]) : tensor<?x8x64xf32>
// FORCED:         %[[P:.+]]:4 = scf.forall (%[[PART:.+]], %{{.+}}, %{{.+}}) in (3, %{{.+}}, 2) shared_outs({{.+}}) -> (tensor<3x?x8x64xf32>, tensor<3x?x8xf32>, tensor<3x?x8xf32>, tensor<3x?x8xf32>)
// FORCED:           scf.if
// FORCED:             arith.ceildivui %[[KEYS:.+]], %c3
// FORCED:             %[[CHUNK:.+]] = arith.muli %{{.+}}, %c64
// FORCED:             %[[BEGIN:.+]] = arith.muli %[[CHUNK]], %[[PART]]
// FORCED:             %[[NEXT:.+]] = arith.addi %[[BEGIN]], %[[CHUNK]]
// FORCED:             %[[END:.+]] = arith.minsi %[[NEXT]], %[[KEYS]]
// FORCED:             scf.for %{{.+}} = %[[BEGIN]] to %{{.+}} step %c64
// FORCED-NOT:         math.log
// FORCED:           tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[PART]], %[[ROW:.+]], %{{.+}}, 0] [1, %[[COUNT:.+]], 1, 64] [1, 1, 1, 1] : tensor<?x64xf32> into tensor<3x?x8x64xf32>
// FORCED:           tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[PART]], %[[ROW]], %{{.+}}] [1, %[[COUNT]], 1] [1, 1, 1] : tensor<?xf32> into tensor<3x?x8xf32>
// FORCED:         } {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>, #gated_attention.tile<2>]}
// FORCED:         %[[GATE:.+]] = tensor.extract_slice %[[G]][0, 0, 0] [%[[T]], 8, 64]
// FORCED:         %[[M:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]]#2 : tensor<3x?x8xf32>)
// FORCED:           arith.maximumf
// FORCED:         %[[SIGMA:.+]] = linalg.generic {{.+}} ins(%[[P]]#3 : tensor<3x?x8xf32>)
// FORCED:           arith.minimumf
// FORCED:         %[[W:.+]] = linalg.generic {{.+}} ins(%[[P]]#2, %[[M]], %[[P]]#3, %[[SIGMA]] :
// FORCED:           math.exp
// FORCED:         %[[L:.+]] = linalg.generic {{.+}} ins(%[[W]], %[[P]]#1 :
// FORCED:         %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[L]], %[[GATE]] : {{.+}}) outs(%[[OUTS]] : tensor<?x8x64xf32>)
// FORCED:           scf.for %[[I:.+]] = %c0 to %c3 step %c1
// FORCED:             tensor.extract %[[W]][%[[I]],
// FORCED:             tensor.extract %[[P]]#0[%[[I]],
// FORCED:           math.exp
// FORCED:         return %[[OUT]]

// Both forms, no scf.if around them: the unsplit tiles run over all tiles
// or none, the split form over the others and merges all T tokens or none
// into slices of the one result.
// AUTO-LABEL: func.func @paged
// AUTO-NOT:     scf.if
// AUTO:         %[[T:.+]] = tensor.dim %arg0, %c0
// AUTO:         %[[B:.+]] = tensor.dim %arg4, %c0
// AUTO:         %[[TILES:.+]] = arith.addi %{{.+}}, %[[B]]
// AUTO:         %[[BUSY:.+]] = arith.minui %[[T]], %[[TILES]]
// AUTO:         %[[WORK:.+]] = arith.muli %[[BUSY]], %c2
// AUTO:         %[[LONGEST:.+]] = scf.for %{{.+}} = %c0 to %[[B]] step %c1 iter_args
// AUTO:           tensor.extract %arg4
// AUTO:           arith.maxsi
// AUTO:         arith.divui %[[LONGEST]], %c256
// AUTO:         %[[FEW:.+]] = arith.cmpi ult, %[[WORK]], %c16
// AUTO:         %[[N:.+]] = arith.select %[[FEW]], %{{.+}}, %c1
// AUTO:         %[[SPLIT:.+]] = arith.cmpi ugt, %[[N]], %c1
// AUTO:         %[[UNSPLIT_TILES:.+]] = arith.select %[[SPLIT]], %c0, %[[TILES]]
// AUTO:         %[[UNSPLIT:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (%[[UNSPLIT_TILES]], 2)
// AUTO:         } {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>]}
// AUTO:         %[[TS:.+]] = arith.select %[[SPLIT]], %[[T]], %c0
// AUTO:         %[[DEST:.+]] = tensor.extract_slice %[[UNSPLIT]][0, 0, 0] [%[[TS]], 8, 64]
// AUTO:         %[[SPLIT_TILES:.+]] = arith.select %[[SPLIT]], %[[TILES]], %c0
// AUTO:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%[[N]], %[[SPLIT_TILES]], 2) {{.+}} -> (tensor<?x?x8x64xf32>,
// AUTO:         } {mapping = [#gated_attention.tile<0>, #gated_attention.tile<1>, #gated_attention.tile<2>]}
// AUTO:         %[[MERGED:.+]] = linalg.generic {{.+}} outs(%[[DEST]] : tensor<?x8x64xf32>)
// AUTO:         %[[RESULT:.+]] = tensor.insert_slice %[[MERGED]] into %[[UNSPLIT]][0, 0, 0] [%[[TS]], 8, 64]
// AUTO:         return %[[RESULT]]

// OFF-LABEL: func.func @paged
// OFF-NOT:     x?x8xf32>
// OFF:         scf.forall (%{{.+}}, %{{.+}}) in (%{{.+}}, 2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<?x8x64xf32>)
// OFF-NOT:     x?x8xf32>
// OFF-NOT:     scf.forall (
// OFF:         return
func.func @paged(%q: tensor<?x8x64xf32>, %kc: tensor<?x16x2x64xf32>,
                 %vc: tensor<?x16x2x64xf32>, %t: tensor<?x?xi32>,
                 %l: tensor<?xi32>, %cu: tensor<?xi32>,
                 %g: tensor<?x8x64xf32>) -> tensor<?x8x64xf32> {
  %o = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu, %g {causal}
      : (tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>,
         tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x8x64xf32>)
      -> tensor<?x8x64xf32>
  return %o : tensor<?x8x64xf32>
}
