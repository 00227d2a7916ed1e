// Attention ops for the PTX checks: f32 / f16 / bf16, D = Dv in {64, 128,
// 256}, causal or not, elementwise or headwise gate; Hq 16 over Hkv 2,
// dynamic sequence lengths.

func.func @attn_f32_d64_full_elementwise(%q: tensor<1x16x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x64xf32>, %g: tensor<1x16x?x64xf32>) -> tensor<1x16x?x64xf32> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x16x?x64xf32>) -> tensor<1x16x?x64xf32>
  return %r : tensor<1x16x?x64xf32>
}

func.func @attn_f32_d64_full_headwise(%q: tensor<1x16x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x64xf32>, %g: tensor<1x16x?x1xf32>) -> tensor<1x16x?x64xf32> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x16x?x1xf32>) -> tensor<1x16x?x64xf32>
  return %r : tensor<1x16x?x64xf32>
}

func.func @attn_f32_d64_causal_elementwise(%q: tensor<1x16x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x64xf32>, %g: tensor<1x16x?x64xf32>) -> tensor<1x16x?x64xf32> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x16x?x64xf32>) -> tensor<1x16x?x64xf32>
  return %r : tensor<1x16x?x64xf32>
}

func.func @attn_f32_d64_causal_headwise(%q: tensor<1x16x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x64xf32>, %g: tensor<1x16x?x1xf32>) -> tensor<1x16x?x64xf32> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x16x?x1xf32>) -> tensor<1x16x?x64xf32>
  return %r : tensor<1x16x?x64xf32>
}

func.func @attn_f32_d128_full_elementwise(%q: tensor<1x16x?x128xf32>, %k: tensor<1x2x?x128xf32>, %v: tensor<1x2x?x128xf32>, %g: tensor<1x16x?x128xf32>) -> tensor<1x16x?x128xf32> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x128xf32>, tensor<1x2x?x128xf32>, tensor<1x2x?x128xf32>, tensor<1x16x?x128xf32>) -> tensor<1x16x?x128xf32>
  return %r : tensor<1x16x?x128xf32>
}

func.func @attn_f32_d128_full_headwise(%q: tensor<1x16x?x128xf32>, %k: tensor<1x2x?x128xf32>, %v: tensor<1x2x?x128xf32>, %g: tensor<1x16x?x1xf32>) -> tensor<1x16x?x128xf32> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x128xf32>, tensor<1x2x?x128xf32>, tensor<1x2x?x128xf32>, tensor<1x16x?x1xf32>) -> tensor<1x16x?x128xf32>
  return %r : tensor<1x16x?x128xf32>
}

func.func @attn_f32_d128_causal_elementwise(%q: tensor<1x16x?x128xf32>, %k: tensor<1x2x?x128xf32>, %v: tensor<1x2x?x128xf32>, %g: tensor<1x16x?x128xf32>) -> tensor<1x16x?x128xf32> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x128xf32>, tensor<1x2x?x128xf32>, tensor<1x2x?x128xf32>, tensor<1x16x?x128xf32>) -> tensor<1x16x?x128xf32>
  return %r : tensor<1x16x?x128xf32>
}

func.func @attn_f32_d128_causal_headwise(%q: tensor<1x16x?x128xf32>, %k: tensor<1x2x?x128xf32>, %v: tensor<1x2x?x128xf32>, %g: tensor<1x16x?x1xf32>) -> tensor<1x16x?x128xf32> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x128xf32>, tensor<1x2x?x128xf32>, tensor<1x2x?x128xf32>, tensor<1x16x?x1xf32>) -> tensor<1x16x?x128xf32>
  return %r : tensor<1x16x?x128xf32>
}

func.func @attn_f32_d256_full_elementwise(%q: tensor<1x16x?x256xf32>, %k: tensor<1x2x?x256xf32>, %v: tensor<1x2x?x256xf32>, %g: tensor<1x16x?x256xf32>) -> tensor<1x16x?x256xf32> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x256xf32>, tensor<1x2x?x256xf32>, tensor<1x2x?x256xf32>, tensor<1x16x?x256xf32>) -> tensor<1x16x?x256xf32>
  return %r : tensor<1x16x?x256xf32>
}

func.func @attn_f32_d256_full_headwise(%q: tensor<1x16x?x256xf32>, %k: tensor<1x2x?x256xf32>, %v: tensor<1x2x?x256xf32>, %g: tensor<1x16x?x1xf32>) -> tensor<1x16x?x256xf32> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x256xf32>, tensor<1x2x?x256xf32>, tensor<1x2x?x256xf32>, tensor<1x16x?x1xf32>) -> tensor<1x16x?x256xf32>
  return %r : tensor<1x16x?x256xf32>
}

func.func @attn_f32_d256_causal_elementwise(%q: tensor<1x16x?x256xf32>, %k: tensor<1x2x?x256xf32>, %v: tensor<1x2x?x256xf32>, %g: tensor<1x16x?x256xf32>) -> tensor<1x16x?x256xf32> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xf32>, tensor<1x2x?x256xf32>, tensor<1x2x?x256xf32>, tensor<1x16x?x256xf32>) -> tensor<1x16x?x256xf32>
  return %r : tensor<1x16x?x256xf32>
}

func.func @attn_f32_d256_causal_headwise(%q: tensor<1x16x?x256xf32>, %k: tensor<1x2x?x256xf32>, %v: tensor<1x2x?x256xf32>, %g: tensor<1x16x?x1xf32>) -> tensor<1x16x?x256xf32> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xf32>, tensor<1x2x?x256xf32>, tensor<1x2x?x256xf32>, tensor<1x16x?x1xf32>) -> tensor<1x16x?x256xf32>
  return %r : tensor<1x16x?x256xf32>
}

func.func @attn_f16_d64_full_elementwise(%q: tensor<1x16x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>, %g: tensor<1x16x?x64xf16>) -> tensor<1x16x?x64xf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x16x?x64xf16>) -> tensor<1x16x?x64xf16>
  return %r : tensor<1x16x?x64xf16>
}

func.func @attn_f16_d64_full_headwise(%q: tensor<1x16x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>, %g: tensor<1x16x?x1xf16>) -> tensor<1x16x?x64xf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x16x?x1xf16>) -> tensor<1x16x?x64xf16>
  return %r : tensor<1x16x?x64xf16>
}

func.func @attn_f16_d64_causal_elementwise(%q: tensor<1x16x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>, %g: tensor<1x16x?x64xf16>) -> tensor<1x16x?x64xf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x16x?x64xf16>) -> tensor<1x16x?x64xf16>
  return %r : tensor<1x16x?x64xf16>
}

func.func @attn_f16_d64_causal_headwise(%q: tensor<1x16x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>, %g: tensor<1x16x?x1xf16>) -> tensor<1x16x?x64xf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x16x?x1xf16>) -> tensor<1x16x?x64xf16>
  return %r : tensor<1x16x?x64xf16>
}

func.func @attn_f16_d128_full_elementwise(%q: tensor<1x16x?x128xf16>, %k: tensor<1x2x?x128xf16>, %v: tensor<1x2x?x128xf16>, %g: tensor<1x16x?x128xf16>) -> tensor<1x16x?x128xf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x16x?x128xf16>) -> tensor<1x16x?x128xf16>
  return %r : tensor<1x16x?x128xf16>
}

func.func @attn_f16_d128_full_headwise(%q: tensor<1x16x?x128xf16>, %k: tensor<1x2x?x128xf16>, %v: tensor<1x2x?x128xf16>, %g: tensor<1x16x?x1xf16>) -> tensor<1x16x?x128xf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x16x?x1xf16>) -> tensor<1x16x?x128xf16>
  return %r : tensor<1x16x?x128xf16>
}

func.func @attn_f16_d128_causal_elementwise(%q: tensor<1x16x?x128xf16>, %k: tensor<1x2x?x128xf16>, %v: tensor<1x2x?x128xf16>, %g: tensor<1x16x?x128xf16>) -> tensor<1x16x?x128xf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x16x?x128xf16>) -> tensor<1x16x?x128xf16>
  return %r : tensor<1x16x?x128xf16>
}

func.func @attn_f16_d128_causal_headwise(%q: tensor<1x16x?x128xf16>, %k: tensor<1x2x?x128xf16>, %v: tensor<1x2x?x128xf16>, %g: tensor<1x16x?x1xf16>) -> tensor<1x16x?x128xf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x16x?x1xf16>) -> tensor<1x16x?x128xf16>
  return %r : tensor<1x16x?x128xf16>
}

func.func @attn_f16_d256_full_elementwise(%q: tensor<1x16x?x256xf16>, %k: tensor<1x2x?x256xf16>, %v: tensor<1x2x?x256xf16>, %g: tensor<1x16x?x256xf16>) -> tensor<1x16x?x256xf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x256xf16>, tensor<1x2x?x256xf16>, tensor<1x2x?x256xf16>, tensor<1x16x?x256xf16>) -> tensor<1x16x?x256xf16>
  return %r : tensor<1x16x?x256xf16>
}

func.func @attn_f16_d256_full_headwise(%q: tensor<1x16x?x256xf16>, %k: tensor<1x2x?x256xf16>, %v: tensor<1x2x?x256xf16>, %g: tensor<1x16x?x1xf16>) -> tensor<1x16x?x256xf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x256xf16>, tensor<1x2x?x256xf16>, tensor<1x2x?x256xf16>, tensor<1x16x?x1xf16>) -> tensor<1x16x?x256xf16>
  return %r : tensor<1x16x?x256xf16>
}

func.func @attn_f16_d256_causal_elementwise(%q: tensor<1x16x?x256xf16>, %k: tensor<1x2x?x256xf16>, %v: tensor<1x2x?x256xf16>, %g: tensor<1x16x?x256xf16>) -> tensor<1x16x?x256xf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xf16>, tensor<1x2x?x256xf16>, tensor<1x2x?x256xf16>, tensor<1x16x?x256xf16>) -> tensor<1x16x?x256xf16>
  return %r : tensor<1x16x?x256xf16>
}

func.func @attn_f16_d256_causal_headwise(%q: tensor<1x16x?x256xf16>, %k: tensor<1x2x?x256xf16>, %v: tensor<1x2x?x256xf16>, %g: tensor<1x16x?x1xf16>) -> tensor<1x16x?x256xf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xf16>, tensor<1x2x?x256xf16>, tensor<1x2x?x256xf16>, tensor<1x16x?x1xf16>) -> tensor<1x16x?x256xf16>
  return %r : tensor<1x16x?x256xf16>
}

func.func @attn_bf16_d64_full_elementwise(%q: tensor<1x16x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %g: tensor<1x16x?x64xbf16>) -> tensor<1x16x?x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x16x?x64xbf16>) -> tensor<1x16x?x64xbf16>
  return %r : tensor<1x16x?x64xbf16>
}

func.func @attn_bf16_d64_full_headwise(%q: tensor<1x16x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %g: tensor<1x16x?x1xbf16>) -> tensor<1x16x?x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x16x?x1xbf16>) -> tensor<1x16x?x64xbf16>
  return %r : tensor<1x16x?x64xbf16>
}

func.func @attn_bf16_d64_causal_elementwise(%q: tensor<1x16x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %g: tensor<1x16x?x64xbf16>) -> tensor<1x16x?x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x16x?x64xbf16>) -> tensor<1x16x?x64xbf16>
  return %r : tensor<1x16x?x64xbf16>
}

func.func @attn_bf16_d64_causal_headwise(%q: tensor<1x16x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %g: tensor<1x16x?x1xbf16>) -> tensor<1x16x?x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x16x?x1xbf16>) -> tensor<1x16x?x64xbf16>
  return %r : tensor<1x16x?x64xbf16>
}

func.func @attn_bf16_d128_full_elementwise(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>, %g: tensor<1x16x?x128xbf16>) -> tensor<1x16x?x128xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x128xbf16>) -> tensor<1x16x?x128xbf16>
  return %r : tensor<1x16x?x128xbf16>
}

func.func @attn_bf16_d128_full_headwise(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>, %g: tensor<1x16x?x1xbf16>) -> tensor<1x16x?x128xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x1xbf16>) -> tensor<1x16x?x128xbf16>
  return %r : tensor<1x16x?x128xbf16>
}

func.func @attn_bf16_d128_causal_elementwise(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>, %g: tensor<1x16x?x128xbf16>) -> tensor<1x16x?x128xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x128xbf16>) -> tensor<1x16x?x128xbf16>
  return %r : tensor<1x16x?x128xbf16>
}

func.func @attn_bf16_d128_causal_headwise(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>, %g: tensor<1x16x?x1xbf16>) -> tensor<1x16x?x128xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x1xbf16>) -> tensor<1x16x?x128xbf16>
  return %r : tensor<1x16x?x128xbf16>
}

func.func @attn_bf16_d256_full_elementwise(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>, %v: tensor<1x2x?x256xbf16>, %g: tensor<1x16x?x256xbf16>) -> tensor<1x16x?x256xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>) -> tensor<1x16x?x256xbf16>
  return %r : tensor<1x16x?x256xbf16>
}

func.func @attn_bf16_d256_full_headwise(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>, %v: tensor<1x2x?x256xbf16>, %g: tensor<1x16x?x1xbf16>) -> tensor<1x16x?x256xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g 
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x1xbf16>) -> tensor<1x16x?x256xbf16>
  return %r : tensor<1x16x?x256xbf16>
}

func.func @attn_bf16_d256_causal_elementwise(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>, %v: tensor<1x2x?x256xbf16>, %g: tensor<1x16x?x256xbf16>) -> tensor<1x16x?x256xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>) -> tensor<1x16x?x256xbf16>
  return %r : tensor<1x16x?x256xbf16>
}

func.func @attn_bf16_d256_causal_headwise(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>, %v: tensor<1x2x?x256xbf16>, %g: tensor<1x16x?x1xbf16>) -> tensor<1x16x?x256xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x1xbf16>) -> tensor<1x16x?x256xbf16>
  return %r : tensor<1x16x?x256xbf16>
}

