// The AMX tiles of gated-attention-amx-tiles, run on any CPU: each tile op
// rewritten into linalg ops of the same meaning (test-amx-emulation), the
// result compared with the same contraction computed by loops. Small
// integers make every sum exact, so any wrong tile offset, stride, step or
// operand pairing shows as a nonzero difference. Shapes: 32 rows (2 tiles),
// 48 columns (3 tiles: a 2 x 2 group and a 2 x 1 one), 64 pairs (4 steps),
// the left operand a strided view with an offset, a nonzero accumulator.
// RUN: gated-attention-opt %s --gated-attention-amx-tiles --test-amx-emulation \
// RUN:   --convert-linalg-to-loops --expand-strided-metadata --lower-affine \
// RUN:   --convert-scf-to-cf --convert-math-to-llvm --convert-vector-to-llvm \
// RUN:   --finalize-memref-to-llvm --convert-arith-to-llvm --convert-func-to-llvm \
// RUN:   --convert-cf-to-llvm --convert-ub-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

// CHECK: largest difference: 0
// CHECK-NEXT: sum: [[SUM:[0-9]+]]
// CHECK-NOT: sum: 0{{$}}
// The same contraction marked to start from zero (S = Q Kᵀ): its
// accumulator tiles start from tilezero, whatever the buffer held.
// CHECK: from zero, largest difference: 0
// CHECK-NEXT: sum: [[SUM0:[0-9]+]]
// CHECK-NOT: sum: 0{{$}}

#lhs = affine_map<(m, n, k, p) -> (m, k, p)>
#rhs = affine_map<(m, n, k, p) -> (k, n, p)>
#acc = affine_map<(m, n, k, p) -> (m, n)>
// The same maps, iterated (m, k, n, p): not a pair contraction to the pass.
#lhsRef = affine_map<(m, k, n, p) -> (m, k, p)>
#rhsRef = affine_map<(m, k, n, p) -> (k, n, p)>
#accRef = affine_map<(m, k, n, p) -> (m, n)>
#id3 = affine_map<(a, b, c) -> (a, b, c)>
#id2 = affine_map<(a, b) -> (a, b)>
#sum = affine_map<(a, b) -> ()>

func.func @tiles(%a: memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>,
                 %b: memref<64x48x2xbf16>, %c: memref<32x48xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>, memref<64x48x2xbf16>)
      outs(%c : memref<32x48xf32>) {
  ^bb0(%x: bf16, %y: bf16, %s: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %s, %p : f32
    linalg.yield %r : f32
  }
  return
}

func.func @tiles_from_zero(%a: memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>,
                           %b: memref<64x48x2xbf16>, %c: memref<32x48xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>, memref<64x48x2xbf16>)
      outs(%c : memref<32x48xf32>) attrs = {gated_attention.amx_zero_start} {
  ^bb0(%x: bf16, %y: bf16, %s: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %s, %p : f32
    linalg.yield %r : f32
  }
  return
}

func.func @loops(%a: memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>,
                 %b: memref<64x48x2xbf16>, %c: memref<32x48xf32>) {
  linalg.generic {indexing_maps = [#lhsRef, #rhsRef, #accRef],
                  iterator_types = ["parallel", "reduction", "parallel", "reduction"]}
      ins(%a, %b : memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>, memref<64x48x2xbf16>)
      outs(%c : memref<32x48xf32>) {
  ^bb0(%x: bf16, %y: bf16, %s: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %r = arith.addf %s, %p : f32
    linalg.yield %r : f32
  }
  return
}

// v = ((i0 * f0 + i1 * f1 + i2 * f2) mod 7) - 3, as bf16 (exact).
func.func @fill3(%m: memref<?x?x?xbf16>, %f0: i64, %f1: i64, %f2: i64) {
  linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%m : memref<?x?x?xbf16>) {
  ^bb0(%out: bf16):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %j0 = arith.index_cast %i0 : index to i64
    %j1 = arith.index_cast %i1 : index to i64
    %j2 = arith.index_cast %i2 : index to i64
    %t0 = arith.muli %j0, %f0 : i64
    %t1 = arith.muli %j1, %f1 : i64
    %t2 = arith.muli %j2, %f2 : i64
    %s0 = arith.addi %t0, %t1 : i64
    %s1 = arith.addi %s0, %t2 : i64
    %c7 = arith.constant 7 : i64
    %c3 = arith.constant 3 : i64
    %r = arith.remui %s1, %c7 : i64
    %v = arith.subi %r, %c3 : i64
    %f = arith.sitofp %v : i64 to bf16
    linalg.yield %f : bf16
  }
  return
}


func.func @main() {
  %big = memref.alloc() : memref<40x100x2xbf16>
  %b = memref.alloc() : memref<64x48x2xbf16>
  %bigDyn = memref.cast %big : memref<40x100x2xbf16> to memref<?x?x?xbf16>
  %bDyn = memref.cast %b : memref<64x48x2xbf16> to memref<?x?x?xbf16>
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %c5 = arith.constant 5 : i64
  call @fill3(%bigDyn, %c3, %c2, %c1) : (memref<?x?x?xbf16>, i64, i64, i64) -> ()
  call @fill3(%bDyn, %c5, %c1, %c3) : (memref<?x?x?xbf16>, i64, i64, i64) -> ()
  // Rows 4..36, pairs 16..80 of the larger buffer.
  %a0 = memref.subview %big[4, 16, 0] [32, 64, 2] [1, 1, 1]
      : memref<40x100x2xbf16> to memref<32x64x2xbf16, strided<[200, 2, 1], offset: 832>>
  %a = memref.cast %a0 : memref<32x64x2xbf16, strided<[200, 2, 1], offset: 832>>
      to memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>
  %amx = memref.alloc() : memref<32x48xf32>
  %ref = memref.alloc() : memref<32x48xf32>
  // A nonzero start: (m + n) mod 3.
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      outs(%amx, %ref : memref<32x48xf32>, memref<32x48xf32>) {
  ^bb0(%o1: f32, %o2: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %s = arith.addi %i, %j : index
    %c3i = arith.constant 3 : index
    %r = arith.remui %s, %c3i : index
    %ri = arith.index_cast %r : index to i64
    %f = arith.sitofp %ri : i64 to f32
    linalg.yield %f, %f : f32, f32
  }
  call @tiles(%a, %b, %amx) : (memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>, memref<64x48x2xbf16>, memref<32x48xf32>) -> ()
  call @loops(%a, %b, %ref) : (memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>, memref<64x48x2xbf16>, memref<32x48xf32>) -> ()
  // Largest |difference|, and the sum of |results| (not all zero).
  %diff = memref.alloc() : memref<f32>
  %total = memref.alloc() : memref<f32>
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %diff[] : memref<f32>
  memref.store %zero, %total[] : memref<f32>
  linalg.generic {indexing_maps = [#id2, #id2, #sum, #sum], iterator_types = ["reduction", "reduction"]}
      ins(%amx, %ref : memref<32x48xf32>, memref<32x48xf32>) outs(%diff, %total : memref<f32>, memref<f32>) {
  ^bb0(%x: f32, %y: f32, %d: f32, %t: f32):
    %e = arith.subf %x, %y : f32
    %ae = math.absf %e : f32
    %m = arith.maximumf %d, %ae : f32
    %ay = math.absf %y : f32
    %nt = arith.addf %t, %ay : f32
    linalg.yield %m, %nt : f32, f32
  }
  %dv = memref.load %diff[] : memref<f32>
  %tv = memref.load %total[] : memref<f32>
  vector.print str "largest difference: "
  vector.print %dv : f32
  vector.print str "sum: "
  vector.print %tv : f32
  // From zero: the tiles' buffer still holds the results above, the
  // loops' starts from 0.
  %ref0 = memref.alloc() : memref<32x48xf32>
  linalg.fill ins(%zero : f32) outs(%ref0 : memref<32x48xf32>)
  call @tiles_from_zero(%a, %b, %amx) : (memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>, memref<64x48x2xbf16>, memref<32x48xf32>) -> ()
  call @loops(%a, %b, %ref0) : (memref<32x64x2xbf16, strided<[200, 2, 1], offset: ?>>, memref<64x48x2xbf16>, memref<32x48xf32>) -> ()
  memref.store %zero, %diff[] : memref<f32>
  memref.store %zero, %total[] : memref<f32>
  linalg.generic {indexing_maps = [#id2, #id2, #sum, #sum], iterator_types = ["reduction", "reduction"]}
      ins(%amx, %ref0 : memref<32x48xf32>, memref<32x48xf32>) outs(%diff, %total : memref<f32>, memref<f32>) {
  ^bb0(%x: f32, %y: f32, %d: f32, %t: f32):
    %e = arith.subf %x, %y : f32
    %ae = math.absf %e : f32
    %m = arith.maximumf %d, %ae : f32
    %ay = math.absf %y : f32
    %nt = arith.addf %t, %ay : f32
    linalg.yield %m, %nt : f32, f32
  }
  %dv0 = memref.load %diff[] : memref<f32>
  %tv0 = memref.load %total[] : memref<f32>
  vector.print str "from zero, largest difference: "
  vector.print %dv0 : f32
  vector.print str "sum: "
  vector.print %tv0 : f32
  return
}
