// An elementwise op on complex numbers that the NVVM lowering does not
// lower (complex.add it does).
func.func @f(%a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xcomplex<f32>>) outs(%a : tensor<4xcomplex<f32>>) {
  ^bb0(%x: complex<f32>, %y: complex<f32>):
    %e = complex.exp %x : complex<f32>
    linalg.yield %e : complex<f32>
  } -> tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
}
