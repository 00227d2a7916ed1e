// A module whose data layout makes index 32 bits wide: upstream lowerings
// the pipelines use emit 64-bit index constants regardless.
module attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>} {
  func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x32x64xf32>,
               %v: tensor<1x2x32x64xf32>) -> tensor<1x2x16x64xf32> {
    %0 = gated_attention.attention %q, %k, %v
        : (tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>) -> tensor<1x2x16x64xf32>
    return %0 : tensor<1x2x16x64xf32>
  }
}
