// Math ops without an LLVM intrinsic become libm calls, which mlir-runner
// resolves in its own process (numerics in f32/f16/bf16: test/python/cpu_math.py).
// RUN: gated-attention-opt %s --gated-attention-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%libomp \
// RUN:   | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)
func.func @main() {
  %a = arith.constant dense<[0.0, 0.5, 1.0, -2.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = math.erf %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %u = tensor.cast %0 : tensor<4xf32> to tensor<*xf32>
  // erf(0), erf(0.5), erf(1), erf(-2)
  // CHECK: sizes = [4]
  // CHECK-NEXT: [0, {{ *}}0.5205, {{ *}}0.842701, {{ *}}-0.995322]
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
