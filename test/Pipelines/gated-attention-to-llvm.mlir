// The CPU pipeline leaves only the LLVM (and OpenMP) dialects.
// RUN: gated-attention-opt %s --gated-attention-to-llvm=vector-bits=512 | FileCheck %s --check-prefix=LLVM \
// RUN:   --implicit-check-not=gated_attention. --implicit-check-not=linalg. \
// RUN:   --implicit-check-not=tensor. --implicit-check-not=memref. \
// RUN:   '--implicit-check-not== vector.' --implicit-check-not=vector.transfer \
// RUN:   --implicit-check-not=scf. --implicit-check-not=memrefCopy
// The register tile follows the vector width: two registers per row.
// RUN: gated-attention-opt %s --gated-attention-to-llvm=vector-bits=256 | FileCheck %s --check-prefix=AVX2
// AVX2-LABEL: llvm.func @structure
// AVX2: llvm.intr.fmuladd{{.*}}vector<16xf32>
// AVX2-NOT: llvm.intr.fmuladd{{.*}}vector<32xf32>
// AVX2-LABEL: llvm.func @main
// Without OpenMP there is no omp dialect either.
// RUN: gated-attention-opt %s --gated-attention-to-llvm=openmp=0 | FileCheck %s --check-prefix=SEQ
// The reference path runs too.
// RUN: gated-attention-opt %s --gated-attention-to-llvm=reference=1 \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN:   | FileCheck %s
// And it runs. Skv = 1 makes every softmax weight 1 (Y = V) or, for a query
// row that sees no key under the causal mask, 0: the results are known exactly.
// RUN: gated-attention-opt %s --gated-attention-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%libomp \
// RUN:   | FileCheck %s

// LLVM-LABEL: llvm.func @attention
// LLVM-LABEL: llvm.func @structure
// The forall over (heads, query blocks) runs as an OpenMP loop and the tile
// contractions are vector FMAs.
// LLVM: omp.parallel
// LLVM: omp.wsloop
// LLVM: omp.loop_nest
// LLVM: llvm.intr.fmuladd{{.*}}vector<32xf32>
// LLVM-LABEL: llvm.func @main
// SEQ-NOT: omp.
// SEQ: llvm.func @main

func.func private @printMemrefF32(tensor<*xf32>)

// Causal with Sq = 2 > Skv = 1: query row 0 sees no key (0 <= 0 + (1 - 2)
// is false), row 1 sees key 0.
func.func @attention(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x1x2xf32>,
                     %v: tensor<1x1x1x2xf32>, %g: tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %mul = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x1x2x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %add = gated_attention.attention %q, %k, %v, %g {causal, combine = #gated_attention.combine<add>, gate = #gated_attention.gate<ns_sigmoid>}
      : (tensor<1x1x2x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %mul, %add : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}

// Large enough to keep its parallel loop (4 heads x 2 query blocks).
func.func @structure(%q: tensor<1x4x128x32xf32>, %k: tensor<1x2x128x32xf32>,
                     %v: tensor<1x2x128x32xf32>, %g: tensor<1x4x128x32xf32>) -> tensor<1x4x128x32xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x4x128x32xf32>, tensor<1x2x128x32xf32>, tensor<1x2x128x32xf32>, tensor<1x4x128x32xf32>) -> tensor<1x4x128x32xf32>
  return %0 : tensor<1x4x128x32xf32>
}

func.func @main() {
  %q = arith.constant dense<[[[[1.0, -3.0], [0.5, 7.0]]]]> : tensor<1x1x2x2xf32>
  %k = arith.constant dense<[[[[2.0, 1.0]]]]> : tensor<1x1x1x2xf32>
  %v = arith.constant dense<[[[[2.0, 4.0]]]]> : tensor<1x1x1x2xf32>
  %g = arith.constant dense<0.0> : tensor<1x1x2x2xf32>
  %mul, %add = call @attention(%q, %k, %v, %g)
      : (tensor<1x1x2x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>)
  // Y * sigmoid(0) = 0.5 * Y, and 0 for the empty row (not NaN).
  // CHECK: sizes = [1, 1, 2, 2]
  // CHECK-NEXT: {{\[}}{{\[}}{{\[}}{{\[}}0, {{ *}}0],
  // CHECK-NEXT: {{\[}}1, {{ *}}2]]]]
  %u0 = tensor.cast %mul : tensor<1x1x2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  // Y + (0.5 + 0.5 * sigmoid(0)) = Y + 0.75.
  // CHECK: sizes = [1, 1, 2, 2]
  // CHECK-NEXT: {{\[}}{{\[}}{{\[}}{{\[}}0.75, {{ *}}0.75],
  // CHECK-NEXT: {{\[}}2.75, {{ *}}4.75]]]]
  %u1 = tensor.cast %add : tensor<1x1x2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  return
}
