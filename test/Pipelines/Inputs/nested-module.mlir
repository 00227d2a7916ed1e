// A function in a nested module next to one at the top level; the
// nested one holds a module of its own.
module @inner {
  func.func @nested(%q: tensor<1x2x16x64xf16>) -> tensor<1x2x16x64xf16> {
    %a = gated_attention.attention %q, %q, %q : (tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>) -> tensor<1x2x16x64xf16>
    return %a : tensor<1x2x16x64xf16>
  }
  module @innermost {
    func.func @deeper(%x: f32) -> f32 {
      %y = arith.addf %x, %x : f32
      return %y : f32
    }
  }
}
func.func @top(%q: tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32> {
  %a = gated_attention.attention %q, %q, %q {causal} : (tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32>
  return %a : tensor<1x2x16x64xf32>
}
