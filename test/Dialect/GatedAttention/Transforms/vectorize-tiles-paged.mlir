// RUN: gated-attention-opt %s --gated-attention-tile="key-block=64 kv-splits=1" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles --canonicalize --cse \
// RUN:   | FileCheck %s
// RUN: gated-attention-opt %s --gated-attention-tile="key-block=64 kv-splits=1" \
// RUN:   --canonicalize --cse --gated-attention-vectorize-tiles="matrix-units=avx512-bf16" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=PAIRS

// A 64-key block of 16-token pages is 4 pieces, each within one page. The
// contractions read it packed (Kᵀ transposed, V copied for f32); each
// piece is packed from its page into the packed tile, so no assembled copy
// of a whole block is made first (it had been: the paged decode step read
// its keys and values twice). max|v| reads the packed V. Only a sequence's
// last, partial block (pieces of dynamic size) is still assembled.
// CHECK-LABEL: func.func @pages_16
// CHECK-SAME:    (%{{[^:]+}}: tensor<?x4x32xf32>, %[[KC:[^:]+]]: tensor<?x16x2x32xf32>, %[[VC:[^:]+]]: tensor<?x16x2x32xf32>
// CHECK-NOT:     tensor.insert_slice %extracted_slice{{[_0-9]*}} into %{{[^ ]+}} [16, 32] [1, 1] : tensor<16x32xf32> into tensor<64x32xf32>
// CHECK:         scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}}) -> (tensor<32x64xf32>)
// CHECK:           tensor.extract_slice %[[KC]]
// CHECK:           vector.shuffle
// CHECK:           tensor.insert_slice %{{.+}} into %{{.+}}[0, %{{.+}}] [32, 16] [1, 1] : tensor<32x16xf32> into tensor<32x64xf32>
// CHECK-NOT:     tensor.insert_slice %extracted_slice{{[_0-9]*}} into %{{[^ ]+}} [16, 32] [1, 1] : tensor<16x32xf32> into tensor<64x32xf32>
// CHECK:         scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}}) -> (tensor<64x32xf32>)
// CHECK:           tensor.extract_slice %[[VC]]
// CHECK:           tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0] [16, 32] [1, 1] : tensor<16x32xf32> into tensor<64x32xf32>
// CHECK-NOT:     tensor.insert_slice %extracted_slice{{[_0-9]*}} into %{{[^ ]+}} [16, 32] [1, 1] : tensor<16x32xf32> into tensor<64x32xf32>
// CHECK:         return
func.func @pages_16(%q: tensor<?x4x32xf32>, %kc: tensor<?x16x2x32xf32>, %vc: tensor<?x16x2x32xf32>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x32xf32> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<?x4x32xf32>, tensor<?x16x2x32xf32>, tensor<?x16x2x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x32xf32>
  return %r : tensor<?x4x32xf32>
}

// bf16: the pieces are widened into the packed f32 V, and max|v|, which
// compares bf16 values on their 16 bits, takes them from the high half of
// the packed f32 bits (the widening is exact), so no bf16 block is
// assembled either.
// CHECK-LABEL: func.func @pages_16_bf16
// CHECK-NOT:     tensor.insert_slice %extracted_slice{{[_0-9]*}} into %{{[^ ]+}} [16, 32] [1, 1] : tensor<16x32xbf16> into tensor<64x32xbf16>
// CHECK:         scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}}) -> (tensor<64x32xf32>)
// CHECK:           arith.extf %{{.+}} : vector<{{.+}}xbf16> to vector<{{.+}}xf32>
// CHECK:           tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0] [16, 32] [1, 1] : tensor<16x32xf32> into tensor<64x32xf32>
// CHECK-NOT:     tensor.insert_slice %extracted_slice{{[_0-9]*}} into %{{[^ ]+}} [16, 32] [1, 1] : tensor<16x32xbf16> into tensor<64x32xbf16>
// CHECK:         %[[WIDE:.+]] = arith.bitcast %{{.+}} : vector<1x32xf32> to vector<1x32xi32>
// CHECK-NEXT:    %[[HIGH:.+]] = arith.shrui %[[WIDE]], %{{.+}} : vector<1x32xi32>
// CHECK-NEXT:    arith.trunci %[[HIGH]] : vector<1x32xi32> to vector<1x32xi16>
// CHECK-NOT:     tensor.insert_slice %extracted_slice{{[_0-9]*}} into %{{[^ ]+}} [16, 32] [1, 1] : tensor<16x32xbf16> into tensor<64x32xbf16>
// CHECK:         return
func.func @pages_16_bf16(%q: tensor<?x4x32xbf16>, %kc: tensor<?x16x2x32xbf16>, %vc: tensor<?x16x2x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x32xbf16> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<?x4x32xbf16>, tensor<?x16x2x32xbf16>, tensor<?x16x2x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x32xbf16>
  return %r : tensor<?x4x32xbf16>
}

// On the matrix units (AVX512-BF16 here; AMX packs the same way) the bf16
// products read K and V as pairs of the reduction dimension, (k/2, n, 2),
// built as (k/2, 2n) rows: each piece is packed from its page in place
// into its slice of the rows, K's at twice its first key, V's at its first
// key's pair, and max|v| reads the packed pairs as 2n columns (a column's
// even and odd keys apart).
// PAIRS-LABEL: func.func @pages_16_bf16
// PAIRS-NOT:     tensor.insert_slice %extracted_slice{{[_0-9]*}} into %{{[^ ]+}} [16, 32] [1, 1] : tensor<16x32xbf16> into tensor<64x32xbf16>
// PAIRS:         scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}}) -> (tensor<16x128xbf16>)
// PAIRS:           %[[KEY:.+]] = arith.muli %{{.+}}, %c32 : index
// PAIRS-NEXT:      tensor.extract_slice %[[KROWS:[a-z0-9_]+]][0, %[[KEY]]] [16, 32] [1, 1] : tensor<16x128xbf16> to tensor<16x32xbf16>
// PAIRS:           tensor.insert_slice %{{.+}} into %[[KROWS]][0, %[[KEY]]] [16, 32] [1, 1] : tensor<16x32xbf16> into tensor<16x128xbf16>
// PAIRS:         tensor.expand_shape %{{.+}} {{\[}}[0], [1, 2]] output_shape [16, 64, 2] : tensor<16x128xbf16> into tensor<16x64x2xbf16>
// PAIRS:         scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}}) -> (tensor<32x64xbf16>)
// PAIRS:           %[[PAIR:.+]] = arith.divui %{{.+}}, %c2 : index
// PAIRS-NEXT:      tensor.extract_slice %[[VROWS:[a-z0-9_]+]][%[[PAIR]], 0] [8, 64] [1, 1] : tensor<32x64xbf16> to tensor<8x64xbf16>
// PAIRS:           vector.interleave
// PAIRS:           tensor.insert_slice %{{.+}} into %[[VROWS]][%[[PAIR]], 0] [8, 64] [1, 1] : tensor<8x64xbf16> into tensor<32x64xbf16>
// PAIRS:         x86vector.avx512.dot
// PAIRS:         scf.for %{{.+}} = %c0 to %c32 step %c1 iter_args(%{{.+}}) -> (tensor<64xi16>)
// PAIRS:           arith.bitcast %{{.+}} : vector<1x64xbf16> to vector<1x64xi16>
// PAIRS-NOT:     tensor.insert_slice %extracted_slice{{[_0-9]*}} into %{{[^ ]+}} [16, 32] [1, 1] : tensor<16x32xbf16> into tensor<64x32xbf16>
// PAIRS:         return
