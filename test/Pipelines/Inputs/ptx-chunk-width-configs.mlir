// Head dims whose rows of 16-byte chunks do not divide the threads: D = 192
// (DeepSeek's query/key head dim) with Dv = 128, 24 chunks a row, which 256
// threads do not divide at 16 keys a block; D = 96 (Phi-3's), 12 chunks a
// row for 128 threads.

func.func @paged_bf16_d192_p16_causal(%q: tensor<?x8x192xbf16>, %kc: tensor<?x16x2x192xbf16>, %vc: tensor<?x16x2x128xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>, %g: tensor<?x8x128xbf16>) -> tensor<?x8x128xbf16> {
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu, %g {causal}
      : (tensor<?x8x192xbf16>, tensor<?x16x2x192xbf16>, tensor<?x16x2x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x8x128xbf16>) -> tensor<?x8x128xbf16>
  return %r : tensor<?x8x128xbf16>
}

func.func @decode_f16_d192(%q: tensor<?x8x1x192xf16>, %k: tensor<?x2x?x192xf16>, %v: tensor<?x2x?x128xf16>, %g: tensor<?x8x1x128xf16>) -> tensor<?x8x1x128xf16> {
  %r = gated_attention.attention %q, %k, %v, %g
      : (tensor<?x8x1x192xf16>, tensor<?x2x?x192xf16>, tensor<?x2x?x128xf16>, tensor<?x8x1x128xf16>) -> tensor<?x8x1x128xf16>
  return %r : tensor<?x8x1x128xf16>
}

func.func @dense_bf16_d96(%q: tensor<?x32x?x96xbf16>, %k: tensor<?x32x?x96xbf16>, %v: tensor<?x32x?x96xbf16>, %g: tensor<?x32x?x96xbf16>) -> tensor<?x32x?x96xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x32x?x96xbf16>, tensor<?x32x?x96xbf16>, tensor<?x32x?x96xbf16>, tensor<?x32x?x96xbf16>) -> tensor<?x32x?x96xbf16>
  return %r : tensor<?x32x?x96xbf16>
}
