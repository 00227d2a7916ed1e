func.func @bad(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>,
               %v: tensor<1x2x4x16xf32>, %g: tensor<1x2x4x8xf32>) -> tensor<1x2x4x16xf32> {
  // The gate is neither elementwise (Dg = Dv = 16) nor headwise (Dg = 1).
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x16xf32>
  return %0 : tensor<1x2x4x16xf32>
}
