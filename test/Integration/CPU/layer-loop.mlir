// Attention whose result a loop carries (a loop over layers), compiled by
// the whole pipeline and run. With one key the softmax weight is 1 and
// sigmoid(0) = 1/2, so each step halves its value operand:
//   acc <- attention(q, k, acc, 0) = acc / 2,
// and three steps from v0 = 8 * [1..8] give [1..8] exactly, with an
// scf.for and an affine.for (lowered to scf before bufferization). The
// loop's yield is a new buffer per step (bufferization allows allocations
// returned from loops; the deallocation pipeline frees them).
// RUN: gated-attention-opt %s --gated-attention-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%libomp \
// RUN:   | FileCheck %s
// RUN: gated-attention-opt %s --gated-attention-to-llvm=reference=1 \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%libomp \
// RUN:   | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @layers(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x1x4xf32>,
                  %v0: tensor<1x2x1x4xf32>, %n: index) -> tensor<1x2x1x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x1x4xf32>
  %g = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v0) -> tensor<1x2x1x4xf32> {
    %a = gated_attention.attention %q, %k, %acc, %g
        : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
    scf.yield %a : tensor<1x2x1x4xf32>
  }
  return %r : tensor<1x2x1x4xf32>
}

func.func @layers_affine(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x1x4xf32>,
                         %v0: tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x1x4xf32>
  %g = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %r = affine.for %i = 0 to 3 iter_args(%acc = %v0) -> tensor<1x2x1x4xf32> {
    %a = gated_attention.attention %q, %k, %acc, %g
        : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
    affine.yield %a : tensor<1x2x1x4xf32>
  }
  return %r : tensor<1x2x1x4xf32>
}

func.func @main() {
  %q = arith.constant dense<1.0> : tensor<1x2x1x4xf32>
  %k = arith.constant dense<0.5> : tensor<1x2x1x4xf32>
  %v0 = arith.constant dense<[[[[8.0, 16.0, 24.0, 32.0]], [[40.0, 48.0, 56.0, 64.0]]]]> : tensor<1x2x1x4xf32>
  %n = arith.constant 3 : index
  %out = call @layers(%q, %k, %v0, %n) : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, index) -> tensor<1x2x1x4xf32>
  // CHECK: sizes = [1, 2, 1, 4]
  // CHECK-NEXT: {{\[}}{{\[}}{{\[}}{{\[}}1, {{ *}}2, {{ *}}3, {{ *}}4]],
  // CHECK-NEXT: {{\[}}{{\[}}5, {{ *}}6, {{ *}}7, {{ *}}8]]]]
  %u = tensor.cast %out : tensor<1x2x1x4xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  %out2 = call @layers_affine(%q, %k, %v0) : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  // CHECK: sizes = [1, 2, 1, 4]
  // CHECK-NEXT: {{\[}}{{\[}}{{\[}}{{\[}}1, {{ *}}2, {{ *}}3, {{ *}}4]],
  // CHECK-NEXT: {{\[}}{{\[}}5, {{ *}}6, {{ *}}7, {{ *}}8]]]]
  %u2 = tensor.cast %out2 : tensor<1x2x1x4xf32> to tensor<*xf32>
  call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  return
}
