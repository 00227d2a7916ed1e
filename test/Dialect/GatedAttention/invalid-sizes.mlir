// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics

// Sizes no lowering can take: the verifier rejects them, so that no pass
// divides by a zero head count or multiplies sizes past 64 bits.

func.func @zero_query_heads(%q: tensor<1x0x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x0x8x16xf32> {
  // expected-error @+1 {{query dim 1 (Hq) must be positive, got 0}}
  %r = gated_attention.attention %q, %k, %v : (tensor<1x0x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x0x8x16xf32>
  return %r : tensor<1x0x8x16xf32>
}

// -----

func.func @zero_kv_heads(%q: tensor<1x2x8x16xf32>, %k: tensor<1x0x8x16xf32>, %v: tensor<1x0x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{key dim 1 (Hkv) must be positive, got 0}}
  %r = gated_attention.attention %q, %k, %v : (tensor<1x2x8x16xf32>, tensor<1x0x8x16xf32>, tensor<1x0x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %r : tensor<1x2x8x16xf32>
}

// -----

func.func @zero_head_dim(%q: tensor<1x4x8x0xf16>, %k: tensor<1x2x8x0xf16>, %v: tensor<1x2x8x16xf16>, %g: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  // expected-error @+1 {{query dim 3 (D) must be positive, got 0}}
  %r = gated_attention.attention %q, %k, %v, %g : (tensor<1x4x8x0xf16>, tensor<1x2x8x0xf16>, tensor<1x2x8x16xf16>, tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %r : tensor<1x4x8x16xf16>
}

// -----

func.func @zero_value_head_dim(%q: tensor<1x4x8x16xf16>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x8x0xf16>) -> tensor<1x4x8x0xf16> {
  // expected-error @+1 {{value dim 3 (Dv) must be positive, got 0}}
  %r = gated_attention.attention %q, %k, %v : (tensor<1x4x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x0xf16>) -> tensor<1x4x8x0xf16>
  return %r : tensor<1x4x8x0xf16>
}

// -----

func.func @huge_value_head_dim(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x9223372036854775807xf32>) -> tensor<1x2x8x9223372036854775807xf32> {
  // expected-error @+1 {{value has more than 2^48 elements (sizes 1 x 2 x 8 x 9223372036854775807)}}
  %r = gated_attention.attention %q, %k, %v : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x9223372036854775807xf32>) -> tensor<1x2x8x9223372036854775807xf32>
  return %r : tensor<1x2x8x9223372036854775807xf32>
}

// -----

func.func @huge_sequence(%q: tensor<1x4x9223372036854775807x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>) -> tensor<1x4x9223372036854775807x128xbf16> {
  // expected-error @+1 {{query has more than 2^48 elements (sizes 1 x 4 x 9223372036854775807 x 128)}}
  %r = gated_attention.attention %q, %k, %v : (tensor<1x4x9223372036854775807x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>) -> tensor<1x4x9223372036854775807x128xbf16>
  return %r : tensor<1x4x9223372036854775807x128xbf16>
}

// -----

// Every operand fits, but the reference lowering's Sq x Skv scores would not.
func.func @huge_scores(%q: tensor<?x1x16777216x1xf32>, %k: tensor<?x1x16777217x1xf32>, %v: tensor<?x1x16777217x1xf32>) -> tensor<?x1x16777216x1xf32> {
  // expected-error @+1 {{the score matrix (B x Hq x Sq x Skv) has more than 2^48 elements (sizes ? x 1 x 16777216 x 16777217)}}
  %r = gated_attention.attention %q, %k, %v : (tensor<?x1x16777216x1xf32>, tensor<?x1x16777217x1xf32>, tensor<?x1x16777217x1xf32>) -> tensor<?x1x16777216x1xf32>
  return %r : tensor<?x1x16777216x1xf32>
}

// -----

func.func @head_dim_too_large(%q: tensor<1x1x?x8192xf32>, %k: tensor<1x1x?x8192xf32>, %v: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  // expected-error @+1 {{query dim 3 (head dim) must be at most 4096, got 8192}}
  %r = gated_attention.attention %q, %k, %v : (tensor<1x1x?x8192xf32>, tensor<1x1x?x8192xf32>, tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}
