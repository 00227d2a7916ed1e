// RUN: gated-attention-opt %s --gated-attention-tile="query-block=32 key-block=64" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="register-depth=8" \
// RUN:   --canonicalize --cse | FileCheck %s
// RUN: gated-attention-opt %s --gated-attention-tile="query-block=32 key-block=64" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="register-depth=8" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=MAX
// RUN: gated-attention-opt %s --gated-attention-tile="query-block=32 key-block=64" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="register-depth=8 matrix-units=amx" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=STARTS

// The matrix units multiply bf16 only: with matrix-units=amx (an AMX
// host's default) an f32 S = Q Kᵀ is FMAs whose register tiles start from
// zeros in registers, as with fma, not from a zero-filled S read back
// (which it did when the f32 contraction was taken for AMX).
// STARTS-LABEL: func.func @mha_f32
// STARTS: %[[Z:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// STARTS: scf.for %{{.+}} = %c0 to %c64 step %c32 iter_args(%{{.+}}) -> (tensor<32x64xf32>)
// STARTS-NEXT: tensor.extract_slice %{{.+}} [8, 32] [1, 1] : tensor<32x64xf32> to tensor<8x32xf32>
// STARTS-NEXT: scf.for %{{.+}} = %c0 to %c64 step %c8 iter_args(%{{.+}} = %[[Z]]) -> (vector<8x32xf32>)
// STARTS-NOT: amx.

// A row's max over its 64 keys is a halving tree (llc 22 lowers
// vector.reduction's max as a serial chain of scalar steps), ending in the
// running max.
// MAX-LABEL: func.func @mha_f32
// MAX-NOT: vector.reduction <maxnumf>
// MAX: %[[ROW:.+]] = vector.extract %{{.+}}[0] : vector<64xf32> from vector<1x64xf32>
// MAX-NEXT: %[[M:.+]] = vector.extract %{{.+}}[0] : f32 from vector<1xf32>
// MAX-NEXT: %[[LO32:.+]] = vector.shuffle %[[ROW]], %[[ROW]] [0, {{.+}}, 31]
// MAX-NEXT: %[[HI32:.+]] = vector.shuffle %[[ROW]], %[[ROW]] [32, {{.+}}, 63]
// MAX-NEXT: arith.maxnumf %[[LO32]], %[[HI32]] : vector<32xf32>
// MAX: arith.maxnumf %{{.+}}, %{{.+}} : vector<16xf32>
// MAX: arith.maxnumf %{{.+}}, %{{.+}} : vector<8xf32>
// MAX: arith.maxnumf %{{.+}}, %{{.+}} : vector<4xf32>
// MAX: arith.maxnumf %{{.+}}, %{{.+}} : vector<2xf32>
// MAX: %[[ONE:.+]] = arith.maxnumf %{{.+}}, %{{.+}} : vector<1xf32>
// MAX-NEXT: %[[TOP:.+]] = vector.extract %[[ONE]][0] : f32 from vector<1xf32>
// MAX-NEXT: arith.maxnumf %[[TOP]], %[[M]] : f32
// MAX-NOT: vector.reduction <maxnumf>

// An f32 forward: K is packed transposed as for bf16; V, already f32 and
// (keys, d), is copied into a fresh tile 16 x 16 at a time (no shuffles,
// no conversion), which `P V` then reads at a static stride. `P V` sums each
// register tile from zero over its 8 depth loops of 8 keys, and reads the
// chunk's tile only after the loop, for the one add: read before it, the
// tile held 16 of the 32 vector registers through the loop.
// CHECK-LABEL: func.func @mha_f32
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK: scf.forall
// CHECK: tensor.empty() : tensor<64x64xf32>
// CHECK: vector.shuffle
// CHECK: %[[VPACK:.+]] = tensor.empty() : tensor<64x32xf32>
// CHECK-NEXT: %[[PACKED:.+]] = scf.for %{{.+}} = %c0 to %c64 step %c16 iter_args(%{{.+}} = %[[VPACK]]) -> (tensor<64x32xf32>)
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c32 step %c16
// CHECK-NEXT: %[[SRC:.+]] = tensor.extract_slice %{{.+}} : tensor<64x32xf32> to tensor<16x16xf32>
// CHECK-NEXT: tensor.insert_slice %[[SRC]] into {{.+}} : tensor<16x16xf32> into tensor<64x32xf32>
// CHECK: %[[CHUNK:.+]] = tensor.extract_slice %{{.+}} [8, 32] [1, 1] : tensor<32x32xf32> to tensor<8x32xf32>
// CHECK-NEXT: %[[SUM:.+]] = scf.for %{{.+}} = %c0 to %c64 step %c8 iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK-NOT: vector.transfer_read %[[CHUNK]]
// CHECK: tensor.extract_slice %[[PACKED]]
// CHECK: scf.yield %{{.+}} : vector<8x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[START:.+]] = vector.transfer_read %[[CHUNK]]
// CHECK-NEXT: %[[TOTAL:.+]] = arith.addf %[[SUM]], %[[START]] : vector<8x32xf32>
// CHECK-NEXT: vector.transfer_write %[[TOTAL]], %[[CHUNK]]
func.func @mha_f32(%q: tensor<1x1x32x64xf32>, %k: tensor<1x1x64x64xf32>,
                   %v: tensor<1x1x64x32xf32>, %g: tensor<1x1x32x32xf32>) -> tensor<1x1x32x32xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x1x32x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x32xf32>, tensor<1x1x32x32xf32>) -> tensor<1x1x32x32xf32>
  return %0 : tensor<1x1x32x32xf32>
}
