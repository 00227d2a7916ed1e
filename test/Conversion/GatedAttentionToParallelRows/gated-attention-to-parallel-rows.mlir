// RUN: gated-attention-opt %s --convert-gated-attention-to-parallel-rows=rows-per-block=64 \
// RUN:   | FileCheck %s --implicit-check-not=memref.alloc

// The SIMT form: (batch, head, row block) outside, 64 rows inside; each row
// runs the online softmax over the keys it sees (the causal bound ends the
// loop), keeps q and the accumulator in private buffers and applies the gate
// before its single store. No score buffer exists: the only allocations are
// the ones matched below (--implicit-check-not=memref.alloc).
// CHECK-LABEL: func.func @gqa_causal
// CHECK: %[[K:.+]] = bufferization.to_buffer %{{.+}} read_only : tensor<1x2x130x32xf32> to memref<1x2x130x32xf32>
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<1x8x100x16xf32>
// CHECK: scf.parallel (%[[B:.+]], %[[H:.+]], %[[BLK:.+]]) =
// CHECK: scf.parallel (%[[T:.+]]) = (%{{.+}}) to (%c64{{.*}})
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %[[T]]
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[ROW]]
// CHECK: scf.if %[[IN]]
// CHECK: %[[KVH:.+]] = arith.divui %[[H]], %c4
// CHECK: memref.alloca() : memref<32xf32>
// CHECK: memref.alloca() : memref<16xf32>
// Keys [0, min(max(row + Skv - Sq + 1, 0), Skv)).
// CHECK: %[[END:.+]] = arith.minsi
// CHECK: %[[ML:.+]]:2 = scf.for %[[J:.+]] = %{{.+}} to %[[END]] step %{{.+}} iter_args(%{{.+}} = %cst{{.*}}, %{{.+}} = %cst{{.*}}) -> (f32, f32)
// CHECK: memref.load %[[K]][%[[B]], %[[KVH]], %[[J]], %{{.+}}]
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.exp
// CHECK: scf.yield
// Epilogue: 1/l (0 without keys), sigmoid gate, multiply, store.
// CHECK: %[[EMPTY:.+]] = arith.cmpf oeq, %[[ML]]#1, %[[ZERO:[a-z0-9_]+]] : f32
// CHECK: %[[RCP:.+]] = arith.divf %{{.+}}, %[[ML]]#1 : f32
// CHECK: arith.select %[[EMPTY]], %[[ZERO]], %[[RCP]] : f32
// CHECK: arith.negf
// CHECK: memref.store %{{.+}}, %[[OUT]][%[[B]], %[[H]], %[[ROW]], %{{.+}}]
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
func.func @gqa_causal(%q: tensor<1x8x100x32xf32>, %k: tensor<1x2x130x32xf32>,
                      %v: tensor<1x2x130x16xf32>, %g: tensor<1x8x100x16xf32>) -> tensor<1x8x100x16xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x8x100x32xf32>, tensor<1x2x130x32xf32>, tensor<1x2x130x16xf32>, tensor<1x8x100x16xf32>) -> tensor<1x8x100x16xf32>
  return %0 : tensor<1x8x100x16xf32>
}
