// Elementwise arith/math on whole tensors, static and dynamic, next to
// attention (user code writes them; frontends write linalg.generic).
func.func @f(%q: tensor<1x2x?x16xf16>, %k: tensor<1x2x?x16xf16>,
             %v: tensor<1x2x?x16xf16>, %x: tensor<?x?xf32>,
             %s: tensor<f32>) -> (tensor<1x2x?x16xf32>, tensor<?x?xf32>, tensor<f32>) {
  %o = gated_attention.attention %q, %k, %v
      : (tensor<1x2x?x16xf16>, tensor<1x2x?x16xf16>, tensor<1x2x?x16xf16>) -> tensor<1x2x?x16xf16>
  %w = arith.extf %o : tensor<1x2x?x16xf16> to tensor<1x2x?x16xf32>
  %e = math.exp %x : tensor<?x?xf32>
  %y = arith.addf %e, %x : tensor<?x?xf32>
  %t = arith.mulf %s, %s : tensor<f32>
  return %w, %y, %t : tensor<1x2x?x16xf32>, tensor<?x?xf32>, tensor<f32>
}
