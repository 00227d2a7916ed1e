// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma persistent=1" \
// RUN:   | FileCheck %s
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   | FileCheck %s --check-prefix=ONE

// With persistent=1 the dense sm_90a kernel loops over tiles (TileSequence):
// CTA c of the grid's n (linear over x, y, z) takes tiles c, c + n, ...
// below ceildiv(Sq, 128) x Hq x B, B a new index argument; each role
// carries the blocks counted before the tile and the tile's parity. Q gets
// an `empty` mbarrier (one arrival per consumer warp: 8, 8 bytes more of
// shared memory) that the producer waits on, with the parity flipped from
// the tile's, after the tile's first K load and before its Q load; the
// consumers arrive on it after the key loop (no staged epilogue at D 64).
// The consumers wait for the first tile's Q before their tile loop and for
// each next tile's at the end of the previous one (not at the head of the
// loop's body, where ptxas took the whole tile loop as divergent); the
// producer completes one more phase of Q's barrier after its last tile.
// CHECK-LABEL: func.func @case
// CHECK:       gpu.launch_func @gated_attention_bf16_h2x1_d64_sm90a_persistent::
// CHECK-SAME:    dynamic_shared_memory_size %c82000_i32
// CHECK-LABEL: gpu.func @gated_attention_bf16_h2x1_d64_sm90a_persistent
// CHECK-SAME:    %[[SQ:arg5]]: index, %[[SKV:arg6]]: index, %[[B:arg7]]: index
// CHECK-COUNT-10: nvvm.mbarrier.init
// CHECK-NOT:   nvvm.mbarrier.init
// CHECK:       nvvm.setmaxregister decrease 24
// The tile index and the block count in i32.
// CHECK:       %[[STEP:.+]] = arith.muli %{{.+}}, %grid_dim_z
// CHECK:       %[[FIRST:.+]] = arith.addi %block_id_x, %{{.+}} : index
// CHECK:       %[[FIRST32:.+]] = arith.index_cast %[[FIRST]] : index to i32
// CHECK:       %[[STEP32:.+]] = arith.index_cast %[[STEP]] : index to i32
// CHECK:       %[[TILES:.+]]:2 = scf.for %{{.+}} = %[[FIRST32]] to %{{.+}} step %[[STEP32]] iter_args(%[[COUNT:.+]] = %{{.+}}, %[[PARITY:.+]] = %{{.+}}) -> (i32, i32)
// CHECK:         %[[BLOCKS:.+]] = arith.index_cast %[[COUNT]] : i32 to index
// CHECK:         scf.if
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c16384_i32
// CHECK:         %[[FREED:.+]] = arith.xori %[[PARITY]], %c1_i32
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.+}}, %[[FREED]]
// CHECK:         nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c16384_i32
// CHECK:         scf.for %{{.+}} = %[[BLOCKS]] to %[[END:.+]] step
// CHECK:         %[[NEXT:.+]] = arith.xori %[[PARITY]], %c1_i32
// CHECK:         %[[END32:.+]] = arith.index_cast %[[END]] : index to i32
// CHECK:         scf.yield %[[END32]], %[[NEXT]] : i32, i32
// Once the consumers released the last tile's Q: an arrival on Q's full
// barrier (at 81984) without a copy.
// CHECK:       %[[LAST:.+]] = arith.xori %[[TILES]]#1, %c1_i32
// CHECK:       nvvm.mbarrier.try_wait.parity %{{.+}}, %[[LAST]]
// CHECK:       arith.constant 81984 : index
// CHECK:       nvvm.mbarrier.arrive
// CHECK:       nvvm.setmaxregister increase 240
// CHECK:       arith.constant 81984 : index
// CHECK:       nvvm.mbarrier.try_wait.parity %{{.+}}, %c0_i32
// CHECK:       scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[CPARITY:.+]] = %{{.+}}) -> (i32, i32)
// CHECK-NOT:     nvvm.mbarrier.try_wait.parity %{{.+}}, %[[CPARITY]],
// CHECK:         nvvm.wgmma.mma_async
// The consumers' release of Q (at 81992: after Q's full barrier): once per
// warp, after the key loop.
// CHECK:         %[[QEMPTY:.+]] = arith.constant 81992 : index
// CHECK:         llvm.getelementptr %{{.+}}[%{{.+}}]
// CHECK-NEXT:    nvvm.mbarrier.arrive
// CHECK-NOT:     nvvm.wgmma.mma_async
// CHECK:         %[[CNEXT:.+]] = arith.xori %[[CPARITY]], %c1_i32
// CHECK:         arith.constant 81984 : index
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.+}}, %[[CNEXT]]
// CHECK:         scf.yield %{{.+}}, %[[CNEXT]] : i32, i32
// CHECK:       gpu.return

// Without it: one tile per CTA, no B argument, no Q-empty barrier.
// ONE-LABEL: gpu.func @gated_attention_bf16_h2x1_d64_sm90a(
// ONE-SAME:    %arg5: index, %arg6: index, %arg7: index, %arg8: index, %arg9: index, %arg10: index)
// ONE-COUNT-9: nvvm.mbarrier.init
// ONE-NOT:     nvvm.mbarrier.init
// ONE-NOT:     scf.for {{.+}} iter_args({{.+}}) -> (i32, i32)
// ONE:         gpu.return
func.func @case(%q: tensor<2x2x140x64xbf16>, %k: tensor<2x1x300x64xbf16>, %v: tensor<2x1x300x64xbf16>, %g: tensor<2x2x140x64xbf16>) -> tensor<2x2x140x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g
      : (tensor<2x2x140x64xbf16>, tensor<2x1x300x64xbf16>, tensor<2x1x300x64xbf16>, tensor<2x2x140x64xbf16>) -> tensor<2x2x140x64xbf16>
  return %r : tensor<2x2x140x64xbf16>
}
