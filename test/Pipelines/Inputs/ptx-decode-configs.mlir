// Dense decode steps (gated_attention.attention with a static Sq = 1) for
// the PTX checks of split-KV: f16 / bf16, D = Dv in {64, 128, 256}, causal
// or not, elementwise, headwise or no gate; Hq 16 over Hkv 2 (Qwen3-Next);
// B and Skv dynamic. Each brings the direct kernel, split-KV's split
// kernel and its merge.

func.func @decode_bf16_d64_full_elementwise(%q: tensor<?x16x1x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %g: tensor<?x16x1x64xbf16>) -> tensor<?x16x1x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g
      : (tensor<?x16x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x16x1x64xbf16>) -> tensor<?x16x1x64xbf16>
  return %r : tensor<?x16x1x64xbf16>
}

func.func @decode_f16_d64_causal_none(%q: tensor<?x16x1x64xf16>, %k: tensor<?x2x?x64xf16>, %v: tensor<?x2x?x64xf16>) -> tensor<?x16x1x64xf16> {
  %r = gated_attention.attention %q, %k, %v {causal}
      : (tensor<?x16x1x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>) -> tensor<?x16x1x64xf16>
  return %r : tensor<?x16x1x64xf16>
}

func.func @decode_bf16_d128_causal_headwise(%q: tensor<?x16x1x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %g: tensor<?x16x1x1xbf16>) -> tensor<?x16x1x128xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x16x1x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x16x1x1xbf16>) -> tensor<?x16x1x128xbf16>
  return %r : tensor<?x16x1x128xbf16>
}

func.func @decode_f16_d128_full_elementwise(%q: tensor<?x16x1x128xf16>, %k: tensor<?x2x?x128xf16>, %v: tensor<?x2x?x128xf16>, %g: tensor<?x16x1x128xf16>) -> tensor<?x16x1x128xf16> {
  %r = gated_attention.attention %q, %k, %v, %g
      : (tensor<?x16x1x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x16x1x128xf16>) -> tensor<?x16x1x128xf16>
  return %r : tensor<?x16x1x128xf16>
}

func.func @decode_bf16_d256_causal_elementwise(%q: tensor<?x16x1x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>, %g: tensor<?x16x1x256xbf16>) -> tensor<?x16x1x256xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x16x1x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x16x1x256xbf16>) -> tensor<?x16x1x256xbf16>
  return %r : tensor<?x16x1x256xbf16>
}

func.func @decode_f16_d256_full_headwise(%q: tensor<?x16x1x256xf16>, %k: tensor<?x2x?x256xf16>, %v: tensor<?x2x?x256xf16>, %g: tensor<?x16x1x1xf16>) -> tensor<?x16x1x256xf16> {
  %r = gated_attention.attention %q, %k, %v, %g
      : (tensor<?x16x1x256xf16>, tensor<?x2x?x256xf16>, tensor<?x2x?x256xf16>, tensor<?x16x1x1xf16>) -> tensor<?x16x1x256xf16>
  return %r : tensor<?x16x1x256xf16>
}
