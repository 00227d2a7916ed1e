// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics

// One test per rule of the paged op's shape contract.

func.func @query_rank(%q: tensor<1x5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{query must be a 3-D tensor (T x Hq x D), got 'tensor<1x5x4x64xf32>'}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<1x5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @page_size(%q: tensor<5x4x64xf32>, %kc: tensor<8x24x2x64xf32>, %vc: tensor<8x24x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{key_cache dim 1 (P) (tokens per page) must be a positive multiple of 16, got 24}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf32>, tensor<8x24x2x64xf32>, tensor<8x24x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @dynamic_page(%q: tensor<5x4x64xf32>, %kc: tensor<8x?x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{key_cache dim 1 (P) must be static, got ?}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf32>, tensor<8x?x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @gqa(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x3x64xf32>, %vc: tensor<8x16x3x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{key_cache dim 2 (Hkv) must divide the query head count Hq = 4, got 3}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf32>, tensor<8x16x3x64xf32>, tensor<8x16x3x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @pages_apart(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<9x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{value_cache dim 0 (NB) must be 8, got 9}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<9x16x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @table_type(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi64>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{block_table element type must be i32, got 'i64'}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi64>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @cu_seqlens(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<2xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{cu_seqlens_q dim 0 (B + 1) must be 3, got 2}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @seq_lens(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<3xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{seq_lens dim 0 (B) must be 2, got 3}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @gate_heads(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>, %g: tensor<5x2x64xf32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{gate dim 1 (Hg) must be 4 (per-head gate) or 1 (shared gate), got 2}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu, %g : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>, tensor<5x2x64xf32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @gate_tokens(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>, %g: tensor<6x4x1xf32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{gate dim 0 (T) must be 5, got 6}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu, %g : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>, tensor<6x4x1xf32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

func.func @element_type(%q: tensor<5x4x64xbf16>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xbf16> {
  // expected-error @+1 {{key_cache element type must be 'bf16' (the query element type), got 'f32'}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xbf16>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xbf16>
  return %0 : tensor<5x4x64xbf16>
}

// -----

func.func @unknown_attribute(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{has unknown attribute 'is_causal'; did you mean 'causal'?}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu {is_causal} : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

// Every operand is a dense tensor, the block table included.
func.func @encoded_table(%q: tensor<5x4x64xf32>, %kc: tensor<8x16x2x64xf32>, %vc: tensor<8x16x2x64xf32>, %t: tensor<2x4xi32, "pages">, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor without an encoding, but got 'tensor<2x4xi32, "pages">'}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf32>, tensor<8x16x2x64xf32>, tensor<8x16x2x64xf32>, tensor<2x4xi32, "pages">, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf32>
  return %0 : tensor<5x4x64xf32>
}

// -----

// The paged op is inference-only: no f64 form.
func.func @element_type_f64(%q: tensor<5x4x64xf64>, %kc: tensor<8x16x2x64xf64>, %vc: tensor<8x16x2x64xf64>, %t: tensor<2x4xi32>, %l: tensor<2xi32>, %cu: tensor<3xi32>) -> tensor<5x4x64xf64> {
  // expected-error @+1 {{query element type must be f32, f16 or bf16 (this op has no f64 form), got f64}}
  %0 = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu : (tensor<5x4x64xf64>, tensor<8x16x2x64xf64>, tensor<8x16x2x64xf64>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xf64>
  return %0 : tensor<5x4x64xf64>
}
