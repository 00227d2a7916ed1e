// A small causal f16 attention: the input of the option and exit-status tests.
func.func @f(%q: tensor<1x4x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>, %g: tensor<1x4x?x64xf16>) -> tensor<1x4x?x64xf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal} : (tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x4x?x64xf16>) -> tensor<1x4x?x64xf16>
  return %r : tensor<1x4x?x64xf16>
}
