// Paged attention ops for the PTX checks: f16 / bf16, D = Dv in {64, 128,
// 256}, causal or not, elementwise, headwise or no gate, pages of 16, 64,
// 528 and 1056 tokens (Qwen3-Next's hybrid-cache pages); Hq 16 over Hkv 2;
// T, NB, B and MB dynamic. One f32 op takes the SIMT path (unpaged).

func.func @paged_f16_d64_p16_full_none(%a0: tensor<?x16x64xf16>, %a1: tensor<?x16x2x64xf16>, %a2: tensor<?x16x2x64xf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>) -> tensor<?x16x64xf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5
      : (tensor<?x16x64xf16>, tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x16x64xf16>
  return %r : tensor<?x16x64xf16>
}

func.func @paged_f16_d64_p64_causal_elementwise(%a0: tensor<?x16x64xf16>, %a1: tensor<?x64x2x64xf16>, %a2: tensor<?x64x2x64xf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x64xf16>) -> tensor<?x16x64xf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {causal}
      : (tensor<?x16x64xf16>, tensor<?x64x2x64xf16>, tensor<?x64x2x64xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x64xf16>) -> tensor<?x16x64xf16>
  return %r : tensor<?x16x64xf16>
}

func.func @paged_f16_d128_p16_full_headwise(%a0: tensor<?x16x128xf16>, %a1: tensor<?x16x2x128xf16>, %a2: tensor<?x16x2x128xf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x1xf16>) -> tensor<?x16x128xf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6
      : (tensor<?x16x128xf16>, tensor<?x16x2x128xf16>, tensor<?x16x2x128xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x1xf16>) -> tensor<?x16x128xf16>
  return %r : tensor<?x16x128xf16>
}

func.func @paged_f16_d128_p1056_causal_elementwise(%a0: tensor<?x16x128xf16>, %a1: tensor<?x1056x2x128xf16>, %a2: tensor<?x1056x2x128xf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x128xf16>) -> tensor<?x16x128xf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {causal}
      : (tensor<?x16x128xf16>, tensor<?x1056x2x128xf16>, tensor<?x1056x2x128xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x128xf16>) -> tensor<?x16x128xf16>
  return %r : tensor<?x16x128xf16>
}

func.func @paged_f16_d256_p16_full_elementwise(%a0: tensor<?x16x256xf16>, %a1: tensor<?x16x2x256xf16>, %a2: tensor<?x16x2x256xf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x256xf16>) -> tensor<?x16x256xf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6
      : (tensor<?x16x256xf16>, tensor<?x16x2x256xf16>, tensor<?x16x2x256xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x256xf16>) -> tensor<?x16x256xf16>
  return %r : tensor<?x16x256xf16>
}

func.func @paged_f16_d256_p528_causal_elementwise(%a0: tensor<?x16x256xf16>, %a1: tensor<?x528x2x256xf16>, %a2: tensor<?x528x2x256xf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x256xf16>) -> tensor<?x16x256xf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {causal}
      : (tensor<?x16x256xf16>, tensor<?x528x2x256xf16>, tensor<?x528x2x256xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x256xf16>) -> tensor<?x16x256xf16>
  return %r : tensor<?x16x256xf16>
}

func.func @paged_bf16_d64_p16_full_elementwise(%a0: tensor<?x16x64xbf16>, %a1: tensor<?x16x2x64xbf16>, %a2: tensor<?x16x2x64xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x64xbf16>) -> tensor<?x16x64xbf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6
      : (tensor<?x16x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x64xbf16>) -> tensor<?x16x64xbf16>
  return %r : tensor<?x16x64xbf16>
}

func.func @paged_bf16_d64_p64_causal_elementwise(%a0: tensor<?x16x64xbf16>, %a1: tensor<?x64x2x64xbf16>, %a2: tensor<?x64x2x64xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x64xbf16>) -> tensor<?x16x64xbf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {causal}
      : (tensor<?x16x64xbf16>, tensor<?x64x2x64xbf16>, tensor<?x64x2x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x64xbf16>) -> tensor<?x16x64xbf16>
  return %r : tensor<?x16x64xbf16>
}

func.func @paged_bf16_d128_p16_full_headwise(%a0: tensor<?x16x128xbf16>, %a1: tensor<?x16x2x128xbf16>, %a2: tensor<?x16x2x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x1xbf16>) -> tensor<?x16x128xbf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6
      : (tensor<?x16x128xbf16>, tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x1xbf16>) -> tensor<?x16x128xbf16>
  return %r : tensor<?x16x128xbf16>
}

func.func @paged_bf16_d128_p1056_causal_elementwise(%a0: tensor<?x16x128xbf16>, %a1: tensor<?x1056x2x128xbf16>, %a2: tensor<?x1056x2x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x128xbf16>) -> tensor<?x16x128xbf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {causal}
      : (tensor<?x16x128xbf16>, tensor<?x1056x2x128xbf16>, tensor<?x1056x2x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x128xbf16>) -> tensor<?x16x128xbf16>
  return %r : tensor<?x16x128xbf16>
}

func.func @paged_bf16_d256_p16_full_elementwise(%a0: tensor<?x16x256xbf16>, %a1: tensor<?x16x2x256xbf16>, %a2: tensor<?x16x2x256xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6
      : (tensor<?x16x256xbf16>, tensor<?x16x2x256xbf16>, tensor<?x16x2x256xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16>
  return %r : tensor<?x16x256xbf16>
}

func.func @paged_bf16_d256_p528_causal_elementwise(%a0: tensor<?x16x256xbf16>, %a1: tensor<?x528x2x256xbf16>, %a2: tensor<?x528x2x256xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {causal}
      : (tensor<?x16x256xbf16>, tensor<?x528x2x256xbf16>, tensor<?x528x2x256xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x256xbf16>) -> tensor<?x16x256xbf16>
  return %r : tensor<?x16x256xbf16>
}

func.func @paged_f32_d64_p16_causal_elementwise(%a0: tensor<?x16x64xf32>, %a1: tensor<?x16x2x64xf32>, %a2: tensor<?x16x2x64xf32>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?x16x64xf32>) -> tensor<?x16x64xf32> {
  %r = gated_attention.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {causal}
      : (tensor<?x16x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x16x64xf32>) -> tensor<?x16x64xf32>
  return %r : tensor<?x16x64xf32>
}
