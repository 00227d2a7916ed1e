// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics

// One test per rule the backward adds to the forward's shape contract (which
// it shares, with `output` in the result's place: one test of that here).

// Rule: output is shaped like the forward's result (B x Hq x Sq x Dv).
func.func @output_shape(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x16xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>) {
  // expected-error @+1 {{output dim 3 (Dv) must be 16, got 32}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x16xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x16xf32>)
  return
}

// -----

// Rule: output_grad has the output's shape.
func.func @output_grad_shape(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x48x32xf32>) {
  // expected-error @+1 {{output_grad dim 2 must be 64 (the output's), got 48}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x48x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
  return
}

// -----

// Rule: output_grad is 4-D.
func.func @output_grad_rank(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<8x64x32xf32>) {
  // expected-error @+1 {{output_grad must be a 4-D tensor (B x Hq x Sq x Dv), got 'tensor<8x64x32xf32>'}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<8x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
  return
}

// -----

// Rule: output_grad has the output's element type.
func.func @output_grad_type(%q: tensor<1x8x64x32xf16>, %k: tensor<1x2x64x32xf16>, %v: tensor<1x2x64x32xf16>, %o: tensor<1x8x64x32xf16>, %do: tensor<1x8x64x32xf32>) {
  // expected-error @+1 {{output_grad element type must be 'f16' (the output element type), got 'f32'}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do : (tensor<1x8x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x8x64x32xf16>, tensor<1x8x64x32xf32>) -> (tensor<1x8x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>)
  return
}

// -----

// Rule: each gradient has its input's shape (key_grad: Hkv heads, not Hq).
func.func @key_grad_shape(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>) {
  // expected-error @+1 {{key_grad dim 1 must be 2 (the key's), got 8}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>)
  return
}

// -----

// Rule: each gradient has its input's element type.
func.func @query_grad_type(%q: tensor<1x8x64x32xbf16>, %k: tensor<1x2x64x32xbf16>, %v: tensor<1x2x64x32xbf16>, %o: tensor<1x8x64x32xbf16>, %do: tensor<1x8x64x32xbf16>) {
  // expected-error @+1 {{query_grad element type must be 'bf16' (the query element type), got 'f32'}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do : (tensor<1x8x64x32xbf16>, tensor<1x2x64x32xbf16>, tensor<1x2x64x32xbf16>, tensor<1x8x64x32xbf16>, tensor<1x8x64x32xbf16>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xbf16>, tensor<1x2x64x32xbf16>)
  return
}

// -----

// Rule: gate_grad has the gate's shape (a headwise gate: Dg = 1).
func.func @gate_grad_shape(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x1xf32>) {
  // expected-error @+1 {{gate_grad dim 3 must be 1 (the gate's), got 32}}
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x1xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>)
  return
}

// -----

// Rule: a gate operand has a gate_grad result.
func.func @gate_without_grad(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>) {
  // expected-error @+1 {{has a gate operand but no gate_grad result}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
  return
}

// -----

// Rule: the forward's checks apply (GQA: Hkv divides Hq).
func.func @gqa(%q: tensor<1x8x64x32xf32>, %k: tensor<1x3x64x32xf32>, %v: tensor<1x3x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>) {
  // expected-error @+1 {{key dim 1 (Hkv) must divide the query head count Hq = 8, got 3}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do : (tensor<1x8x64x32xf32>, tensor<1x3x64x32xf32>, tensor<1x3x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x3x64x32xf32>, tensor<1x3x64x32xf32>)
  return
}

// -----

// Rule: unknown attributes are typos.
func.func @unknown_attribute(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>) {
  // expected-error @+1 {{has unknown attribute 'casual'; did you mean 'causal'?}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do {casual} : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
  return
}

// -----

// Rule: lse is the forward's log-sum-exp, in the accumulator type (f32
// for f16).
func.func @lse_type(%q: tensor<1x8x64x32xf16>, %k: tensor<1x2x64x32xf16>, %v: tensor<1x2x64x32xf16>, %o: tensor<1x8x64x32xf16>, %do: tensor<1x8x64x32xf16>, %lse: tensor<1x8x64xf16>) {
  // expected-error @+1 {{lse element type must be 'f32' (the log-sum-exp is kept in the accumulator type, the wider of f32 and the query's 'f16'), got 'f16'}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse) : (tensor<1x8x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x8x64x32xf16>, tensor<1x8x64x32xf16>, tensor<1x8x64xf16>) -> (tensor<1x8x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>)
  return
}

// -----

// Rule: lse is B x Hq x Sq (one value per query row and head).
func.func @lse_rank(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>, %lse: tensor<1x8x64x1xf32>) {
  // expected-error @+1 {{lse must be a 3-D tensor (B x Hq x Sq), got 'tensor<1x8x64x1xf32>'}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse) : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x1xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
  return
}

// -----

// Rule: lse has the query's heads (Hq, not Hkv).
func.func @lse_heads(%q: tensor<1x8x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x64x32xf32>, %do: tensor<1x8x64x32xf32>, %g: tensor<1x8x64x32xf32>, %lse: tensor<1x2x64xf32>) {
  // expected-error @+1 {{lse dim 1 (Hq) must be 8, got 2}}
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) : (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x8x64x32xf32>, tensor<1x2x64xf32>) -> (tensor<1x8x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x64x32xf32>)
  return
}

// -----

// Rule: lse has the query's rows (Sq).
func.func @lse_rows(%q: tensor<1x8x?x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %o: tensor<1x8x?x32xf32>, %do: tensor<1x8x?x32xf32>, %lse: tensor<2x8x?xf32>) {
  // expected-error @+1 {{lse dim 0 (B) must be 1, got 2}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse) : (tensor<1x8x?x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x8x?x32xf32>, tensor<1x8x?x32xf32>, tensor<2x8x?xf32>) -> (tensor<1x8x?x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
  return
}
