// Attention ops that return their log-sum-exp, for the PTX checks of the
// tensor-core kernels that write it: D = Dv in {64, 128, 256} (256, the
// tightest in registers, causal), Hq 16 over Hkv 2 (Qwen3-Next), dynamic
// lengths, and a decode step (static Sq = 1: its direct kernel and
// split-KV's merge write L).

func.func @attn_bf16_d256_causal_elementwise(%q: tensor<?x16x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>, %g: tensor<?x16x?x256xbf16>) -> (tensor<?x16x?x256xbf16>, tensor<?x16x?xf32>) {
  %r:2 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x16x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x16x?x256xbf16>) -> (tensor<?x16x?x256xbf16>, tensor<?x16x?xf32>)
  return %r#0, %r#1 : tensor<?x16x?x256xbf16>, tensor<?x16x?xf32>
}

func.func @attn_f16_d128_full_headwise(%q: tensor<?x16x?x128xf16>, %k: tensor<?x2x?x128xf16>, %v: tensor<?x2x?x128xf16>, %g: tensor<?x16x?x1xf16>) -> (tensor<?x16x?x128xf16>, tensor<?x16x?xf32>) {
  %r:2 = gated_attention.attention %q, %k, %v, %g
      : (tensor<?x16x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x2x?x128xf16>, tensor<?x16x?x1xf16>) -> (tensor<?x16x?x128xf16>, tensor<?x16x?xf32>)
  return %r#0, %r#1 : tensor<?x16x?x128xf16>, tensor<?x16x?xf32>
}

func.func @attn_bf16_d64_causal_elementwise(%q: tensor<?x16x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %g: tensor<?x16x?x64xbf16>) -> (tensor<?x16x?x64xbf16>, tensor<?x16x?xf32>) {
  %r:2 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x16x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x16x?x64xbf16>) -> (tensor<?x16x?x64xbf16>, tensor<?x16x?xf32>)
  return %r#0, %r#1 : tensor<?x16x?x64xbf16>, tensor<?x16x?xf32>
}

func.func @decode_bf16_d256_causal_elementwise(%q: tensor<?x16x1x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>, %g: tensor<?x16x1x256xbf16>) -> (tensor<?x16x1x256xbf16>, tensor<?x16x1xf32>) {
  %r:2 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x16x1x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x16x1x256xbf16>) -> (tensor<?x16x1x256xbf16>, tensor<?x16x1xf32>)
  return %r#0, %r#1 : tensor<?x16x1x256xbf16>, tensor<?x16x1xf32>
}
