// The backward's kernels across head dims, element types, masks, gate
// layouts and GQA (ptxas-backward.test). Sq and Skv are dynamic, as a
// training step compiles them.
func.func @bwd_bf16_d128_causal(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>, %o: tensor<1x16x?x128xbf16>, %do: tensor<1x16x?x128xbf16>, %g: tensor<1x16x?x128xbf16>, %lse: tensor<1x16x?xf32>) -> (tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x128xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x128xbf16>, tensor<1x16x?x128xbf16>, tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>)
      -> (tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x128xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x128xbf16>
}

func.func @bwd_f16_d64_headwise(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x64xf16>, %o: tensor<?x8x?x64xf16>, %do: tensor<?x8x?x64xf16>, %g: tensor<?x8x?x1xf16>, %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x1xf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse)
      : (tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x1xf16>, tensor<?x8x?xf32>)
      -> (tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x1xf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x1xf16>
}

func.func @bwd_bf16_d128_dv64_nogate(%q: tensor<2x4x?x128xbf16>, %k: tensor<2x1x?x128xbf16>, %v: tensor<2x1x?x64xbf16>, %o: tensor<2x4x?x64xbf16>, %do: tensor<2x4x?x64xbf16>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x1x?x64xbf16>) {
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse) {causal}
      : (tensor<2x4x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x1x?x64xbf16>, tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>)
      -> (tensor<2x4x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x1x?x64xbf16>)
  return %r#0, %r#1, %r#2 : tensor<2x4x?x128xbf16>, tensor<2x1x?x128xbf16>, tensor<2x1x?x64xbf16>
}

// Qwen3-Next's attention: D = 256, 16 query heads over 2 K/V heads, causal,
// elementwise per-head gate (two warps share each row tile's columns).
func.func @bwd_bf16_d256_qwen3_next(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>, %v: tensor<1x2x?x256xbf16>, %o: tensor<1x16x?x256xbf16>, %do: tensor<1x16x?x256xbf16>, %g: tensor<1x16x?x256xbf16>, %lse: tensor<1x16x?xf32>) -> (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>, tensor<1x16x?xf32>)
      -> (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>
}

func.func @bwd_f16_d256_dv128_headwise(%q: tensor<?x4x?x256xf16>, %k: tensor<?x4x?x256xf16>, %v: tensor<?x4x?x128xf16>, %o: tensor<?x4x?x128xf16>, %do: tensor<?x4x?x128xf16>, %g: tensor<?x4x?x1xf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x1xf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse)
      : (tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x1xf16>, tensor<?x4x?xf32>)
      -> (tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x1xf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x1xf16>
}

// Head dims that are not powers of two. Above 128 the dK/dV kernel's
// column split puts its warp pairs at the 255-register limit; each warp
// computing both S^T and dP^T there spilled 8 to 40 bytes a thread.
func.func @bwd_bf16_d96_causal(%q: tensor<1x8x?x96xbf16>, %k: tensor<1x2x?x96xbf16>, %v: tensor<1x2x?x96xbf16>, %o: tensor<1x8x?x96xbf16>, %do: tensor<1x8x?x96xbf16>, %g: tensor<1x8x?x96xbf16>, %lse: tensor<1x8x?xf32>) -> (tensor<1x8x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x8x?x96xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<1x8x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x8x?x96xbf16>, tensor<1x8x?x96xbf16>, tensor<1x8x?x96xbf16>, tensor<1x8x?xf32>)
      -> (tensor<1x8x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x8x?x96xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x8x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x2x?x96xbf16>, tensor<1x8x?x96xbf16>
}

func.func @bwd_f16_d192_headwise(%q: tensor<?x4x?x192xf16>, %k: tensor<?x2x?x192xf16>, %v: tensor<?x2x?x192xf16>, %o: tensor<?x4x?x192xf16>, %do: tensor<?x4x?x192xf16>, %g: tensor<?x4x?x1xf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x192xf16>, tensor<?x2x?x192xf16>, tensor<?x2x?x192xf16>, tensor<?x4x?x1xf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse)
      : (tensor<?x4x?x192xf16>, tensor<?x2x?x192xf16>, tensor<?x2x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x1xf16>, tensor<?x4x?xf32>)
      -> (tensor<?x4x?x192xf16>, tensor<?x2x?x192xf16>, tensor<?x2x?x192xf16>, tensor<?x4x?x1xf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<?x4x?x192xf16>, tensor<?x2x?x192xf16>, tensor<?x2x?x192xf16>, tensor<?x4x?x1xf16>
}

func.func @bwd_bf16_d192_causal(%q: tensor<1x8x?x192xbf16>, %k: tensor<1x2x?x192xbf16>, %v: tensor<1x2x?x192xbf16>, %o: tensor<1x8x?x192xbf16>, %do: tensor<1x8x?x192xbf16>, %g: tensor<1x8x?x192xbf16>, %lse: tensor<1x8x?xf32>) -> (tensor<1x8x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x8x?x192xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<1x8x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x8x?x192xbf16>, tensor<1x8x?x192xbf16>, tensor<1x8x?x192xbf16>, tensor<1x8x?xf32>)
      -> (tensor<1x8x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x8x?x192xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x8x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x2x?x192xbf16>, tensor<1x8x?x192xbf16>
}

func.func @bwd_bf16_d224_causal(%q: tensor<1x8x?x224xbf16>, %k: tensor<1x2x?x224xbf16>, %v: tensor<1x2x?x224xbf16>, %o: tensor<1x8x?x224xbf16>, %do: tensor<1x8x?x224xbf16>, %g: tensor<1x8x?x224xbf16>, %lse: tensor<1x8x?xf32>) -> (tensor<1x8x?x224xbf16>, tensor<1x2x?x224xbf16>, tensor<1x2x?x224xbf16>, tensor<1x8x?x224xbf16>) {
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal}
      : (tensor<1x8x?x224xbf16>, tensor<1x2x?x224xbf16>, tensor<1x2x?x224xbf16>, tensor<1x8x?x224xbf16>, tensor<1x8x?x224xbf16>, tensor<1x8x?x224xbf16>, tensor<1x8x?xf32>)
      -> (tensor<1x8x?x224xbf16>, tensor<1x2x?x224xbf16>, tensor<1x2x?x224xbf16>, tensor<1x8x?x224xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x8x?x224xbf16>, tensor<1x2x?x224xbf16>, tensor<1x2x?x224xbf16>, tensor<1x8x?x224xbf16>
}

func.func @bwd_f16_d224_dv160_nogate(%q: tensor<2x4x?x224xf16>, %k: tensor<2x1x?x224xf16>, %v: tensor<2x1x?x160xf16>, %o: tensor<2x4x?x160xf16>, %do: tensor<2x4x?x160xf16>, %lse: tensor<2x4x?xf32>) -> (tensor<2x4x?x224xf16>, tensor<2x1x?x224xf16>, tensor<2x1x?x160xf16>) {
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse) {causal}
      : (tensor<2x4x?x224xf16>, tensor<2x1x?x224xf16>, tensor<2x1x?x160xf16>, tensor<2x4x?x160xf16>, tensor<2x4x?x160xf16>, tensor<2x4x?xf32>)
      -> (tensor<2x4x?x224xf16>, tensor<2x1x?x224xf16>, tensor<2x1x?x160xf16>)
  return %r#0, %r#1, %r#2 : tensor<2x4x?x224xf16>, tensor<2x1x?x224xf16>, tensor<2x1x?x160xf16>
}
