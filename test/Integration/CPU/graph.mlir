// A graph of upstream tensor ops around the attention op (a generic and a
// fill feeding it, whole-tensor arith after it), compiled by the whole
// pipeline and run. With one key the softmax weight is 1, so
// attention(q, k, v, g) = v * sigmoid(g) exactly:
//   v = 2 xv, g = 0  ->  attention = xv on every query row,
//   out = attention + attention = 2 xv.
// RUN: gated-attention-opt %s --gated-attention-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%libomp \
// RUN:   | FileCheck %s

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func private @printMemrefF32(tensor<*xf32>)

func.func @block(%x: tensor<1x2x3x4xf32>, %k: tensor<1x2x1x4xf32>,
                 %xv: tensor<1x2x1x4xf32>) -> tensor<1x2x3x4xf32> {
  %c2 = arith.constant 2.0 : f32
  // v = 2 * xv (an elementwise generic), g = 0 (a fill).
  %ev = tensor.empty() : tensor<1x2x1x4xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%xv : tensor<1x2x1x4xf32>) outs(%ev : tensor<1x2x1x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %c2 : f32
    linalg.yield %m : f32
  } -> tensor<1x2x1x4xf32>
  %zero = arith.constant 0.0 : f32
  %eg = tensor.empty() : tensor<1x2x3x4xf32>
  %g = linalg.fill ins(%zero : f32) outs(%eg : tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %att = gated_attention.attention %x, %k, %v, %g
      : (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  // Arith on whole tensors (the pipeline turns it into linalg).
  %res = arith.addf %att, %att : tensor<1x2x3x4xf32>
  return %res : tensor<1x2x3x4xf32>
}

func.func @main() {
  %x = arith.constant dense<1.0> : tensor<1x2x3x4xf32>
  %k = arith.constant dense<0.5> : tensor<1x2x1x4xf32>
  %xv = arith.constant dense<[[[[1.0, 2.0, 3.0, 4.0]], [[5.0, 6.0, 7.0, 8.0]]]]> : tensor<1x2x1x4xf32>
  %out = call @block(%x, %k, %xv) : (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x3x4xf32>
  // out = 2 xv, on each of the 3 query rows of both heads.
  // CHECK: sizes = [1, 2, 3, 4]
  // CHECK-NEXT: {{\[}}{{\[}}{{\[}}{{\[}}2, {{ *}}4, {{ *}}6, {{ *}}8],
  // CHECK-NEXT: {{\[}}2, {{ *}}4, {{ *}}6, {{ *}}8],
  // CHECK-NEXT: {{\[}}2, {{ *}}4, {{ *}}6, {{ *}}8]],
  // CHECK-NEXT: {{\[}}{{\[}}10, {{ *}}12, {{ *}}14, {{ *}}16],
  // CHECK-NEXT: {{\[}}10, {{ *}}12, {{ *}}14, {{ *}}16],
  // CHECK-NEXT: {{\[}}10, {{ *}}12, {{ *}}14, {{ *}}16]]]]
  %u = tensor.cast %out : tensor<1x2x3x4xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
