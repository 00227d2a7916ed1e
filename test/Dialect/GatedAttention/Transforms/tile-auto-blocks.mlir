// query-block=0, key-block=0 (the defaults): blocks chosen per op.
// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile="threads=2" | FileCheck %s --check-prefixes=CHECK,T2
// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile="threads=32" | FileCheck %s --check-prefixes=CHECK,T32
// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile="threads=64" | FileCheck %s --check-prefixes=CHECK,T64
// Explicit sizes win over the choice.
// RUN: gated-attention-opt %s -split-input-file --gated-attention-tile="query-block=32 key-block=16 threads=2" | FileCheck %s --check-prefix=EXPLICIT

// Long static rows, no mask: tiles of 512 rows over blocks of 256 keys
// (8 heads x 4 tiles >= 4 a thread); with more threads than 256-row tiles
// can keep busy (8 heads x 8 tiles = 64 < 4 x 32), 128 rows (128 tiles)
// over 128 keys, then 64 (256 tiles: the most there are).
// CHECK-LABEL: func.func @long
// T2:            scf.forall {{.+}} to (1, 8, 2048) step (1, 1, 512)
// T2:              scf.for {{.+}} step %c256
// T32:           scf.forall {{.+}} to (1, 8, 2048) step (1, 1, 128)
// T32:             scf.for {{.+}} step %c128
// T64:           scf.forall {{.+}} to (1, 8, 2048) step (1, 1, 64)
// T64:             scf.for {{.+}} step %c128
// EXPLICIT-LABEL: func.func @long
// EXPLICIT:        scf.forall {{.+}} to (1, 8, 2048) step (1, 1, 32)
// EXPLICIT:          scf.for {{.+}} step %c16
func.func @long(%q: tensor<1x8x2048x64xf32>, %k: tensor<1x8x2048x64xf32>, %v: tensor<1x8x2048x64xf32>) -> tensor<1x8x2048x64xf32> {
  %0 = gated_attention.attention %q, %k, %v : (tensor<1x8x2048x64xf32>, tensor<1x8x2048x64xf32>, tensor<1x8x2048x64xf32>) -> tensor<1x8x2048x64xf32>
  return %0 : tensor<1x8x2048x64xf32>
}

// -----

// Qwen3-Next's grouping (16 query heads over 2): a tile stacks the group's 8
// heads, 32 rows each (16 and 8 for more threads).
// CHECK-LABEL: func.func @grouped
// T2:            scf.forall {{.+}} to (1, 16, 1024) step (1, 8, 32)
// T2:              tensor.empty() : tensor<256x64xf32>
// T32:           scf.forall {{.+}} to (1, 16, 1024) step (1, 8, 16)
// T64:           scf.forall {{.+}} to (1, 16, 1024) step (1, 8, 8)
// CHECK:           scf.for {{.+}} step %c128
// Causal: the diagonal in blocks of half the rows per head, at least 32.
// CHECK:           scf.for {{.+}} step %c32
// CHECK:           scf.for {{.+}} step %c32
func.func @grouped(%q: tensor<1x16x1024x64xf32>, %k: tensor<1x2x1024x64xf32>, %v: tensor<1x2x1024x64xf32>) -> tensor<1x16x1024x64xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x16x1024x64xf32>, tensor<1x2x1024x64xf32>, tensor<1x2x1024x64xf32>) -> tensor<1x16x1024x64xf32>
  return %0 : tensor<1x16x1024x64xf32>
}

// -----

// The same at 4096 keys: 512-row tiles (64 rows a head) over 256-key blocks,
// the causal diagonal (64 masked keys a row at most) short against 4096 keys
// (at least 64 keys for each row a head), as long as there are 4 tiles a
// thread (2 x 64 = 128 for 32 threads, not 64); with 2048 keys, as at 1024,
// 256 x 128.
// CHECK-LABEL: func.func @grouped_long
// T2:            scf.forall {{.+}} to (1, 16, 4096) step (1, 8, 64)
// T2:              tensor.empty() : tensor<512x64xf32>
// T2:              scf.for {{.+}} step %c256
// T32:           scf.forall {{.+}} to (1, 16, 4096) step (1, 8, 64)
// T32:             scf.for {{.+}} step %c256
// T64:           scf.forall {{.+}} to (1, 16, 4096) step (1, 8, 32)
// T64:             scf.for {{.+}} step %c128
// CHECK-LABEL: func.func @grouped_2048
// T2:            scf.forall {{.+}} to (1, 16, 2048) step (1, 8, 32)
// T2:              scf.for {{.+}} step %c128
func.func @grouped_long(%q: tensor<1x16x4096x64xf32>, %k: tensor<1x2x4096x64xf32>, %v: tensor<1x2x4096x64xf32>) -> tensor<1x16x4096x64xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x16x4096x64xf32>, tensor<1x2x4096x64xf32>, tensor<1x2x4096x64xf32>) -> tensor<1x16x4096x64xf32>
  return %0 : tensor<1x16x4096x64xf32>
}
func.func @grouped_2048(%q: tensor<1x16x2048x64xf32>, %k: tensor<1x2x2048x64xf32>, %v: tensor<1x2x2048x64xf32>) -> tensor<1x16x2048x64xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x16x2048x64xf32>, tensor<1x2x2048x64xf32>, tensor<1x2x2048x64xf32>) -> tensor<1x16x2048x64xf32>
  return %0 : tensor<1x16x2048x64xf32>
}

// -----

// Causal, one head per tile: its diagonal spans its rows per head, 256 rows
// (two threads) take the 128-key blocks throughout, 128 rows 64-key blocks
// on the diagonal, 64 rows 32-key ones.
// CHECK-LABEL: func.func @long_causal
// CHECK:           scf.for {{.+}} step %c128
// T2-NOT:          step %c64
// T2-NOT:          step %c32
// T32:             scf.for {{.+}} step %c64
// T32:             scf.for {{.+}} step %c64
// T64:             scf.for {{.+}} step %c32
// T64:             scf.for {{.+}} step %c32
// Explicit 16-key blocks: no shorter diagonal blocks (32, the shortest,
// does not divide them).
// EXPLICIT-LABEL: func.func @long_causal
// EXPLICIT:         scf.for {{.+}} step %c16
// EXPLICIT:         scf.for {{.+}} step %c16
// EXPLICIT-NOT:     step %c32
func.func @long_causal(%q: tensor<1x8x2048x64xf32>, %k: tensor<1x8x2048x64xf32>, %v: tensor<1x8x2048x64xf32>) -> tensor<1x8x2048x64xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x8x2048x64xf32>, tensor<1x8x2048x64xf32>, tensor<1x8x2048x64xf32>) -> tensor<1x8x2048x64xf32>
  return %0 : tensor<1x8x2048x64xf32>
}

// -----

// 300 rows and 192 keys: 128 or 256 would pad 384 rows (64 pads 320) and
// 128 would pad 256 keys (64: none), more than 1/8 over: 64 x 64.
// CHECK-LABEL: func.func @ragged
// T2:            scf.forall {{.+}} to (1, 8, 300) step (1, 1, 64)
// CHECK:           scf.for {{.+}} step %c64
// CHECK-NOT:       step %c128
func.func @ragged(%q: tensor<1x8x300x64xf32>, %k: tensor<1x8x192x64xf32>, %v: tensor<1x8x192x64xf32>) -> tensor<1x8x300x64xf32> {
  %0 = gated_attention.attention %q, %k, %v : (tensor<1x8x300x64xf32>, tensor<1x8x192x64xf32>, tensor<1x8x192x64xf32>) -> tensor<1x8x300x64xf32>
  return %0 : tensor<1x8x300x64xf32>
}

// -----

// B, Sq and Skv dynamic (the torch op's functions): 128 keys; tiles counted
// for one sequence of 1024 rows, at most 128 rows per head: 128 rows (8 x 8
// tiles), 64 on 64 threads (8 x 16 tiles, the most there are).
// CHECK-LABEL: func.func @dynamic
// T2:            scf.forall {{.+}} step (1, 1, 128)
// T32:           scf.forall {{.+}} step (1, 1, 64)
// T64:           scf.forall {{.+}} step (1, 1, 64)
// CHECK:           scf.for {{.+}} step %c128
// CHECK-NOT:       step %c256
func.func @dynamic(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %0 = gated_attention.attention %q, %k, %v : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %0 : tensor<?x8x?x64xf32>
}

// -----

// Dynamic, grouped as Qwen3-Next: 8 stacked heads of 32 rows on two threads
// (2 x 32 tiles).
// CHECK-LABEL: func.func @dynamic_grouped
// T2:            scf.forall {{.+}} step (1, 8, 32)
// T32:           scf.forall {{.+}} step (1, 8, 16)
// T64:           scf.forall {{.+}} step (1, 8, 8)
func.func @dynamic_grouped(%q: tensor<?x16x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>) -> tensor<?x16x?x64xf32> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<?x16x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x16x?x64xf32>
  return %0 : tensor<?x16x?x64xf32>
}

// -----

// bf16 keys take blocks of 256 (as many bytes as 128 f32 keys), then one
// whole block of 128 and the rest: masked 128-key blocks without a mask,
// the causal diagonal's 32-key ones with it, all masked (no fourth loop:
// one-shot-bufferize's time grows with each loop in a row).
// CHECK-LABEL: func.func @dynamic_bf16
// T2:            scf.forall {{.+}} step (1, 1, 128)
// CHECK:           scf.for {{.+}} step %c256
// CHECK:           scf.for {{.+}} step %c128
// CHECK-NOT:       to %dim{{[_0-9]*}} step %c256
// CHECK:           scf.for {{.+}} to %dim{{[_0-9]*}} step %c128
// Nor do the tile's other versions (padded, decode) end in 256-key blocks.
// CHECK-NOT:       to %dim{{[_0-9]*}} step %c256
// CHECK:         scf.forall.in_parallel
func.func @dynamic_bf16(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %0 = gated_attention.attention %q, %k, %v : (tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>) -> tensor<?x8x?x64xbf16>
  return %0 : tensor<?x8x?x64xbf16>
}
// CHECK-LABEL: func.func @dynamic_grouped_bf16
// T2:            scf.forall {{.+}} step (1, 8, 32)
// CHECK:           scf.for {{.+}} step %c256
// CHECK:           scf.for {{.+}} step %c128
// CHECK:           scf.for {{.+}} to %dim{{[_0-9]*}} step %c32
// CHECK-NOT:       step %c32
// CHECK:           scf.for {{.+}} step %c256
func.func @dynamic_grouped_bf16(%q: tensor<?x16x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x16x?x64xbf16> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<?x16x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> tensor<?x16x?x64xbf16>
  return %0 : tensor<?x16x?x64xbf16>
}

// -----

// Static bf16 keys as well; 192 keys, which 128-key blocks pad to 256
// (more than 1/8 over), take 64.
// CHECK-LABEL: func.func @static_bf16
// CHECK:           scf.for {{.+}} step %c256
// CHECK:           scf.for {{.+}} step %c128
// CHECK-LABEL: func.func @ragged_bf16
// CHECK:           scf.for {{.+}} step %c64
// CHECK-NOT:       step %c128
// CHECK-NOT:       step %c256
func.func @static_bf16(%q: tensor<1x16x1024x64xbf16>, %k: tensor<1x2x1024x64xbf16>, %v: tensor<1x2x1024x64xbf16>) -> tensor<1x16x1024x64xbf16> {
  %0 = gated_attention.attention %q, %k, %v {causal} : (tensor<1x16x1024x64xbf16>, tensor<1x2x1024x64xbf16>, tensor<1x2x1024x64xbf16>) -> tensor<1x16x1024x64xbf16>
  return %0 : tensor<1x16x1024x64xbf16>
}
func.func @ragged_bf16(%q: tensor<1x8x300x64xbf16>, %k: tensor<1x8x192x64xbf16>, %v: tensor<1x8x192x64xbf16>) -> tensor<1x8x300x64xbf16> {
  %0 = gated_attention.attention %q, %k, %v : (tensor<1x8x300x64xbf16>, tensor<1x8x192x64xbf16>, tensor<1x8x192x64xbf16>) -> tensor<1x8x300x64xbf16>
  return %0 : tensor<1x8x300x64xbf16>
}

// -----

// The paged op keeps 64 x 64: 8 rows for each of the 8 stacked heads.
// CHECK-LABEL: func.func @paged
// CHECK:         arith.ceildivui %{{.+}}, %c8
// CHECK:           scf.for {{.+}} step %c64
func.func @paged(%q: tensor<?x8x32xf32>, %kc: tensor<?x64x1x32xf32>, %vc: tensor<?x64x1x32xf32>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x8x32xf32> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<?x8x32xf32>, tensor<?x64x1x32xf32>, tensor<?x64x1x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x32xf32>
  return %r : tensor<?x8x32xf32>
}
