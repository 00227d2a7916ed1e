// Split-KV of the tiled form (kv-splits): a decode step of one sequence
// (B 1, Hq 8 over Hkv 2, Sq 1: two tiles) gets a forall over (part, head
// group) writing f32 partials, then a merge outside it.
// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile="kv-splits=4 query-block=64 key-block=64" --canonicalize --cse | FileCheck %s --check-prefix=FORCED
// auto with 4 threads: 2 tiles, so ceildiv(4, 2) = 2 parts (Skv / 256 = 3 allows them).
// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile="kv-splits=auto threads=4 query-block=64 key-block=64" --canonicalize --cse | FileCheck %s --check-prefix=AUTO
// auto with 2 threads: the 2 tiles use them; no split.
// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile="kv-splits=auto threads=2 query-block=64 key-block=64" --canonicalize --cse | FileCheck %s --check-prefix=OFF

// Parts of ceildiv(ceildiv(1000, 4), 64) x 64 = 256 keys; the partials
// are [part, B, Hq, Sq(, Dv)]; the merge takes the parts' maximum and
// minimum overflow scale, the weights exp(m_i - m) sigma / sigma_i, sums
// the weighted l_i, and sums the weighted O_i into the gated result.
// FORCED-LABEL: func.func @decode
// FORCED:         %[[P:.+]]:4 = scf.forall (%[[PART:.+]], %{{.+}}) = (0, 0) to (4, 8) step (1, 4) shared_outs({{.+}}) -> (tensor<4x1x8x1x64xf32>, tensor<4x1x8x1xf32>, tensor<4x1x8x1xf32>, tensor<4x1x8x1xf32>)
// FORCED:           %[[BEGIN:.+]] = arith.muli %[[PART]], %c256
// FORCED:           %[[END:.+]] = arith.minsi %{{.+}}, %c1000
// FORCED:           scf.for %{{.+}} = %[[BEGIN]] to %{{.+}} step %c64
// FORCED-NOT:       math.log
// FORCED:           tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[PART]], 0, %{{.+}}, 0, 0] [1, 1, 4, 1, 64]
// FORCED:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// FORCED:         %[[M:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[P]]#2
// FORCED:           arith.maximumf
// FORCED:         %[[SIGMA:.+]] = linalg.generic {{.+}} ins(%[[P]]#3
// FORCED:           arith.minimumf
// FORCED:         %[[W:.+]] = linalg.generic {{.+}} ins(%[[P]]#2, %[[M]], %[[P]]#3, %[[SIGMA]] :
// FORCED:           math.exp
// FORCED:         %[[L:.+]] = linalg.generic {{.+}} ins(%[[W]], %[[P]]#1 :
// FORCED:         %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[L]], %arg3 : {{.+}}) outs(%{{.+}} : tensor<1x8x1x64xf32>)
// FORCED:           scf.for %[[I:.+]] = %c0 to %c4 step %c1
// FORCED:             tensor.extract %[[W]][%[[I]],
// FORCED:             tensor.extract %[[P]]#0[%[[I]],
// FORCED:         return %[[OUT]]

// AUTO-LABEL: func.func @decode
// AUTO:         scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (2, 8) step (1, 4) {{.+}} -> (tensor<2x1x8x1x64xf32>,

// OFF-LABEL: func.func @decode
// OFF-NOT:     x1x8x1x64xf32>
// OFF:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (1, 8, 1) step (1, 4, 1)
// OFF-NOT:     x1x8x1x64xf32>
// OFF:         return
func.func @decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x1000x64xf32>,
                  %v: tensor<1x2x1000x64xf32>, %g: tensor<1x8x1x64xf32>)
    -> tensor<1x8x1x64xf32> {
  %o = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x8x1x64xf32>, tensor<1x2x1000x64xf32>,
         tensor<1x2x1000x64xf32>, tensor<1x8x1x64xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// Skv dynamic under auto: split or not at run time, without an scf.if. The
// unsplit tiles run over batches [0, B - Bs) and the split over [0, Bs),
// Bs = B when the rule picks more than one part, else 0; both write slices
// of one result. The log-sum-exp is the merged m + log l - log sigma.
// FORCED-LABEL: func.func @dynamic_keys
// AUTO-LABEL: func.func @dynamic_keys
// AUTO-NOT:     scf.if
// AUTO:         %[[KEYS:.+]] = tensor.dim %arg1, %c2
// AUTO:         %[[PERKEYS:.+]] = arith.divui %[[KEYS]], %c256
// AUTO:         arith.minui %[[PERKEYS]], %c2
// AUTO:         %[[SPLIT:.+]] = arith.cmpi ugt, %{{.+}}, %c1
// AUTO:         %[[BS:.+]] = arith.select %[[SPLIT]], %c1, %c0
// AUTO:         %[[BU:.+]] = arith.subi %c1, %[[BS]]
// AUTO:         %[[UNSPLIT:.+]]:2 = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (%[[BU]], 8, 1) step (1, 4, 1)
// AUTO:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// AUTO:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (%{{.+}}, %[[BS]], 8) step (1, 1, 4)
// AUTO:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// AUTO:         math.log
// AUTO:         tensor.insert_slice %{{.+}} into %[[UNSPLIT]]#0[0, 0, 0, 0] [%[[BS]], 8, 1, 64]
// AUTO:         tensor.insert_slice %{{.+}} into %[[UNSPLIT]]#1[0, 0, 0] [%[[BS]], 8, 1]
// OFF-LABEL: func.func @dynamic_keys
// OFF-NOT:     x1x8x1x64xf32>
func.func @dynamic_keys(%q: tensor<1x8x1x64xbf16>, %k: tensor<1x2x?x64xbf16>,
                        %v: tensor<1x2x?x64xbf16>)
    -> (tensor<1x8x1x64xbf16>, tensor<1x8x1xf32>) {
  %o, %lse = gated_attention.attention %q, %k, %v {causal}
      : (tensor<1x8x1x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      -> (tensor<1x8x1x64xbf16>, tensor<1x8x1xf32>)
  return %o, %lse : tensor<1x8x1x64xbf16>, tensor<1x8x1xf32>
}

// -----

// B static, Sq and Skv dynamic, gated: the split form's merge covers the
// run-time split batches [0, Bs) in all its operands, the gate included.
// Had it read the whole gate, canonicalization would take the gate's static
// B for Bs, and the merge would overwrite the unsplit result when Bs = 0.
// AUTO-LABEL: func.func @dynamic_rows_gated
// AUTO:         %[[SPLIT:.+]] = arith.cmpi ugt, %{{.+}}, %c1
// AUTO:         %[[BS:.+]] = arith.select %[[SPLIT]], %c1, %c0
// AUTO:         %[[UNSPLIT:.+]] = scf.forall
// AUTO:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// AUTO:         } {mapping = [#gated_attention.tile<0>{{.*}}]}
// AUTO:         %[[GATE:.+]] = tensor.extract_slice %arg3[0, 0, 0, 0] [%[[BS]], 8, %{{.+}}, 64]
// AUTO:         %[[OUT:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[GATE]] : tensor<?x8x?xf32>, tensor<?x8x?x64xbf16>) outs(%{{.+}} : tensor<?x8x?x64xbf16>)
// AUTO:         tensor.insert_slice %[[OUT]] into %[[UNSPLIT]][0, 0, 0, 0] [%[[BS]], 8, %{{.+}}, 64]
func.func @dynamic_rows_gated(%q: tensor<1x8x?x64xbf16>,
                              %k: tensor<1x2x?x64xbf16>,
                              %v: tensor<1x2x?x64xbf16>,
                              %g: tensor<1x8x?x64xbf16>)
    -> tensor<1x8x?x64xbf16> {
  %o = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>,
         tensor<1x8x?x64xbf16>) -> tensor<1x8x?x64xbf16>
  return %o : tensor<1x8x?x64xbf16>
}
