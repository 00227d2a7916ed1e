// Two bf16 ops with the plugin's gates (one kernel each).
func.func @variants(%q: tensor<1x4x300x128xbf16>, %k: tensor<1x2x300x128xbf16>,
                    %v: tensor<1x2x300x128xbf16>, %g: tensor<1x4x300x128xbf16>)
    -> (tensor<1x4x300x128xbf16>, tensor<1x4x300x128xbf16>) {
  %a = gated_attention.attention %q, %k, %v, %g {causal, gate = #gate_variants.tanh}
      : (tensor<1x4x300x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x128xbf16>,
         tensor<1x4x300x128xbf16>) -> tensor<1x4x300x128xbf16>
  %b = gated_attention.attention %q, %k, %v, %g
      {gate = #gate_variants.sigmoid<temperature = 2.0 : f32>}
      : (tensor<1x4x300x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x128xbf16>,
         tensor<1x4x300x128xbf16>) -> tensor<1x4x300x128xbf16>
  return %a, %b : tensor<1x4x300x128xbf16>, tensor<1x4x300x128xbf16>
}
