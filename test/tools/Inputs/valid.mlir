func.func @ok(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %0 = gated_attention.attention %q, %q, %q
      : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}
