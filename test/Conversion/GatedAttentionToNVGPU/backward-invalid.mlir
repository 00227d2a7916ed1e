// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   -verify-diagnostics

// The backward has no other GPU lowering: an op its kernels do not take is
// an error naming why.

func.func @no_lse(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %o: tensor<1x2x?x64xbf16>, %do: tensor<1x2x?x64xbf16>) -> (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) {
  // expected-error @+1 {{no GPU lowering of the backward: the backward kernels read the forward's log-sum-exp: give the op its lse operand}}
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do
      : (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      -> (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
}

// -----

func.func @silu(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %o: tensor<1x2x?x64xbf16>, %do: tensor<1x2x?x64xbf16>, %g: tensor<1x2x?x64xbf16>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) {
  // expected-error @+1 {{no GPU lowering of the backward: the backward kernels read D and dG from the saved output}}
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {gate = #gated_attention.gate<silu>}
      : (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?xf32>)
      -> (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
}

// -----

func.func @f32(%q: tensor<1x2x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x64xf32>, %o: tensor<1x2x?x64xf32>, %do: tensor<1x2x?x64xf32>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) {
  // expected-error @+1 {{no GPU lowering of the backward: the backward kernels take f16 or bf16, not f32}}
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?xf32>)
      -> (tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>
}

// -----

func.func @d320(%q: tensor<1x2x?x320xbf16>, %k: tensor<1x2x?x320xbf16>, %v: tensor<1x2x?x320xbf16>, %o: tensor<1x2x?x320xbf16>, %do: tensor<1x2x?x320xbf16>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>) {
  // expected-error @+1 {{no GPU lowering of the backward: the backward kernels take head dims that are multiples of 16 up to 128, or of 32 up to 256, got D = 320, Dv = 320}}
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>, tensor<1x2x?xf32>)
      -> (tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>, tensor<1x2x?x320xbf16>
}
