// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics

// One test per rule of the shape contract and attributes.

// Rule: query must be a 4-D tensor.
func.func @rule0(%q: tensor<8x64x32xf32>, %k: tensor<1x8x64x32xf32>, %v: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{query must be a 4-D tensor (B x Hq x Sq x D), got 'tensor<8x64x32xf32>'}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: result must be 4-D.
func.func @rule1(%q: tensor<1x8x64x32xf32>, %k: tensor<1x8x64x32xf32>, %v: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<8x64x32xf32> {
  // expected-error @+1 {{result must be a 4-D tensor (B x Hq x Sq x Dv), got 'tensor<8x64x32xf32>'}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<8x64x32xf32>
  return %0 : tensor<8x64x32xf32>
}

// -----

// Rule: element type must be f32, f16, bf16 or f64.
func.func @rule2(%q: tensor<1x8x64x32xf8E4M3FN>, %k: tensor<1x8x64x32xf8E4M3FN>, %v: tensor<1x8x64x32xf8E4M3FN>, %g: tensor<1x8x64x32xf8E4M3FN>) -> tensor<1x8x64x32xf8E4M3FN> {
  // expected-error @+1 {{query element type must be f32, f16, bf16 or f64, got 'f8E4M3FN'}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf8E4M3FN>, tensor<1x8x64x32xf8E4M3FN>, tensor<1x8x64x32xf8E4M3FN>, tensor<1x8x64x32xf8E4M3FN>) -> tensor<1x8x64x32xf8E4M3FN>
  return %0 : tensor<1x8x64x32xf8E4M3FN>
}

// -----

// Rule: all element types equal.
func.func @rule3(%q: tensor<1x8x64x32xf16>, %k: tensor<1x8x64x32xf16>, %v: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf16>) -> tensor<1x8x64x32xf16> {
  // expected-error @+1 {{value element type must be 'f16' (the query element type), got 'f32'}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf16>, tensor<1x8x64x32xf16>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf16>) -> tensor<1x8x64x32xf16>
  return %0 : tensor<1x8x64x32xf16>
}

// -----

// Rule: Hq, Hkv, D, Dv, Hg, Dg static.
func.func @rule4(%q: tensor<1x8x64x32xf32>, %k: tensor<1x8x64x?xf32>, %v: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{key dim 3 (D) must be static, got ?}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x8x64x?xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: same batch everywhere.
func.func @rule5(%q: tensor<2x8x64x32xf32>, %k: tensor<?x8x64x32xf32>, %v: tensor<2x8x64x32xf32>, %g: tensor<3x8x64x32xf32>) -> tensor<2x8x64x32xf32> {
  // expected-error @+1 {{gate dim 0 (B) must be 2, got 3}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<2x8x64x32xf32>, tensor<?x8x64x32xf32>, tensor<2x8x64x32xf32>, tensor<3x8x64x32xf32>) -> tensor<2x8x64x32xf32>
  return %0 : tensor<2x8x64x32xf32>
}

// -----

// Rule: Hkv divides Hq.
func.func @rule6(%q: tensor<1x8x64x32xf32>, %k: tensor<1x3x64x32xf32>, %v: tensor<1x3x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{key dim 1 (Hkv) must divide the query head count Hq = 8, got 3}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x3x64x32xf32>, tensor<1x3x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: key head dim equals query head dim.
func.func @rule7(%q: tensor<1x8x64x32xf32>, %k: tensor<1x8x64x16xf32>, %v: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{key dim 3 (D) must be 32, got 16}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x8x64x16xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: value heads equal key heads.
func.func @rule8(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x4x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{value dim 1 (Hkv) must be 2, got 4}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x4x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: value length equals key length.
func.func @rule9(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x80x32xf32>, %v: tensor<1x2x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{value dim 2 (Skv) must be 80, got 64}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: gate heads Hq or 1.
func.func @rule10(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %g: tensor<1x2x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{gate dim 1 (Hg) must be 8 (per-head gate) or 1 (shared gate), got 2}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: gate length equals query length.
func.func @rule11(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x80x32xf32>, %v: tensor<1x2x80x32xf32>, %g: tensor<1x8x63x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{gate dim 2 (Sq) must be 64, got 63}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x32xf32>, tensor<1x8x63x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: gate width Dv or 1.
func.func @rule12(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x80x32xf32>, %v: tensor<1x2x80x16xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x16xf32> {
  // expected-error @+1 {{gate dim 3 (Dg) must be 16 (elementwise gate) or 1 (headwise gate), got 32}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x16xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x16xf32>
  return %0 : tensor<1x8x64x16xf32>
}

// -----

// Rule: result heads.
func.func @rule13(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x80x32xf32>, %v: tensor<1x2x80x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x2x64x32xf32> {
  // expected-error @+1 {{result dim 1 (Hq) must be 8, got 2}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x2x64x32xf32>
  return %0 : tensor<1x2x64x32xf32>
}

// -----

// Rule: result length.
func.func @rule14(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x80x32xf32>, %v: tensor<1x2x80x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x80x32xf32> {
  // expected-error @+1 {{result dim 2 (Sq) must be 64, got 80}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x80x32xf32>
  return %0 : tensor<1x8x80x32xf32>
}

// -----

// Rule: result width is Dv.
func.func @rule15(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x80x32xf32>, %v: tensor<1x2x80x16xf32>, %g: tensor<1x8x64x16xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{result dim 3 (Dv) must be 16, got 32}}
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x8x64x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x16xf32>, tensor<1x8x64x16xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: scale positive and finite.
func.func @rule16(%q: tensor<1x8x64x32xf32>, %k: tensor<1x8x64x32xf32>, %v: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{scale must be a finite positive number, got -5.000000e-01}}
  %0 = gated_attention.attention %q, %k, %v, %g {scale = -0.5 : f32} : (tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: gate attribute implements the gate-function interface.
func.func @rule17(%q: tensor<1x8x64x32xf32>, %k: tensor<1x8x64x32xf32>, %v: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{attribute 'gate' failed to satisfy constraint: gate function attribute}}
  %0 = gated_attention.attention %q, %k, %v, %g {gate = #gated_attention.combine<add>} : (tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// Rule: combine attribute kind.
func.func @rule18(%q: tensor<1x8x64x32xf32>, %k: tensor<1x8x64x32xf32>, %v: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32> {
  // expected-error @+1 {{attribute 'combine' failed to satisfy constraint: Multiplicative or additive gate}}
  %0 = gated_attention.attention %q, %k, %v, %g {combine = #gated_attention.gate<silu>} : (tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> tensor<1x8x64x32xf32>
  return %0 : tensor<1x8x64x32xf32>
}

// -----

// gated_attention.row_strides: one stride per buffer (query, key, value,
// gate, result).
func.func @row_strides_size(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  // expected-error @+1 {{'gated_attention.row_strides' must be array<i64: query, key, value, gate, result> (the elements between rows of each buffer), got array<i64: 16, 16>}}
  %0 = gated_attention.attention %q, %k, %v {gated_attention.row_strides = array<i64: 16, 16>} : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16>
  return %0 : tensor<1x2x8x16xbf16>
}

// -----

func.func @row_strides_type(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  // expected-error @+1 {{'gated_attention.row_strides' must be array<i64: query, key, value, gate, result>}}
  %0 = gated_attention.attention %q, %k, %v {gated_attention.row_strides = [16, 16, 16, 1, 16]} : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16>
  return %0 : tensor<1x2x8x16xbf16>
}

// -----

// Rows never overlap: a row stride is at least the row's width.
func.func @row_strides_overlap(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x32xbf16>, %g: tensor<1x2x8x32xbf16>) -> tensor<1x2x8x32xbf16> {
  // expected-error @+1 {{'gated_attention.row_strides': the value row stride 16 is smaller than its row (32 elements)}}
  %0 = gated_attention.attention %q, %k, %v, %g {gated_attention.row_strides = array<i64: 16, 16, 16, 32, 32>} : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16>) -> tensor<1x2x8x32xbf16>
  return %0 : tensor<1x2x8x32xbf16>
}

// -----

// A row stride is bounded like every size: its products stay in 64 bits.
func.func @row_strides_huge(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  // expected-error @+1 {{'gated_attention.row_strides': the query row stride 4611686018427387904 is more than 2^48 elements}}
  %0 = gated_attention.attention %q, %k, %v {gated_attention.row_strides = array<i64: 4611686018427387904, 16, 16, 1, 16>} : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16>
  return %0 : tensor<1x2x8x16xbf16>
}

// -----

// The op computes on dense tensors: an encoding (a sparse tensor's) would
// change what the lowerings' buffers hold.
#sparse = #sparse_tensor.encoding<{ map = (d0, d1, d2, d3) -> (d0 : dense, d1 : dense, d2 : dense, d3 : compressed) }>
func.func @sparse_key(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32, #sparse>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor without an encoding, but got 'tensor<1x2x8x16xf32, #sparse_tensor.encoding}}
  %0 = gated_attention.attention %q, %k, %q : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32, #sparse>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

func.func @encoded_result(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32, "rows"> {
  // expected-error @+1 {{result #0 must be ranked tensor without an encoding, but got 'tensor<1x2x8x16xf32, "rows">'}}
  %0 = gated_attention.attention %q, %q, %q : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32, "rows">
  return %0 : tensor<1x2x8x16xf32, "rows">
}

// -----

// Rule: the log-sum-exp result has the accumulator type: f32 for f16,
// bf16 and f32 ops.
func.func @lse_type(%q: tensor<1x8x64x32xf16>, %k: tensor<1x8x64x32xf16>, %v: tensor<1x8x64x32xf16>) {
  // expected-error @+1 {{lse element type must be 'f32' (the log-sum-exp is kept in the accumulator type, the wider of f32 and the query's 'f16'), got 'f16'}}
  %0:2 = gated_attention.attention %q, %k, %v : (tensor<1x8x64x32xf16>, tensor<1x8x64x32xf16>, tensor<1x8x64x32xf16>) -> (tensor<1x8x64x32xf16>, tensor<1x8x64xf16>)
  return
}

// -----

// Rule: ... and f64 for f64 ops.
func.func @lse_type_f64(%q: tensor<1x8x64x32xf64>, %k: tensor<1x8x64x32xf64>, %v: tensor<1x8x64x32xf64>) {
  // expected-error @+1 {{lse element type must be 'f64' (the log-sum-exp is kept in the accumulator type, the wider of f32 and the query's 'f64'), got 'f32'}}
  %0:2 = gated_attention.attention %q, %k, %v : (tensor<1x8x64x32xf64>, tensor<1x8x64x32xf64>, tensor<1x8x64x32xf64>) -> (tensor<1x8x64x32xf64>, tensor<1x8x64xf32>)
  return
}

// -----

// Rule: the log-sum-exp is B x Hq x Sq.
func.func @lse_shape(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>) {
  // expected-error @+1 {{lse dim 2 (Sq) must be 64, got 32}}
  %0:2 = gated_attention.attention %q, %k, %v : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x8x32xf32>)
  return
}

// -----

// Rule: at most the result and the log-sum-exp.
func.func @three_results(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>) {
  // expected-error @+1 {{result group starting at #1 requires 0 or 1 element, but found 2}}
  %0:3 = gated_attention.attention %q, %k, %v : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>)
  return
}
