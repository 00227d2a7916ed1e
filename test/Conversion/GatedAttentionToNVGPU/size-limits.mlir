// RUN: gated-attention-opt %s --split-input-file --convert-gated-attention-to-nvgpu \
// RUN:   -verify-diagnostics

// The kernels compare rows with their bounds in 32 bits: a static row count
// of 2^30 or more is an error at the op, as is a grid dimension past CUDA's
// 65535; 2^30 - 1 query rows compile (@largest). gated_attention.launcher checks
// the same bounds for dynamic sizes (test/python/launcher.py).

func.func @queries(%q: tensor<1x2x1073741824x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x1073741824x64xbf16> {
  // expected-error @+1 {{tensor-core kernel: Sq = 1073741824 must be below 2^30 (the kernels index rows in 32 bits)}}
  %r = gated_attention.attention %q, %k, %v : (tensor<1x2x1073741824x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x2x1073741824x64xbf16>
  return %r : tensor<1x2x1073741824x64xbf16>
}

// -----

func.func @keys(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x2147483648x64xbf16>, %v: tensor<1x2x2147483648x64xbf16>) -> tensor<1x2x?x64xbf16> {
  // expected-error @+1 {{tensor-core kernel: Skv = 2147483648 must be below 2^30}}
  %r = gated_attention.attention %q, %k, %v : (tensor<1x2x?x64xbf16>, tensor<1x2x2147483648x64xbf16>, tensor<1x2x2147483648x64xbf16>) -> tensor<1x2x?x64xbf16>
  return %r : tensor<1x2x?x64xbf16>
}

// -----

func.func @batch(%q: tensor<65536x2x?x64xbf16>, %k: tensor<65536x2x?x64xbf16>, %v: tensor<65536x2x?x64xbf16>) -> tensor<65536x2x?x64xbf16> {
  // expected-error @+1 {{tensor-core kernel: B = 65536 must be at most 65535 (CUDA's grid y and z limit)}}
  %r = gated_attention.attention %q, %k, %v : (tensor<65536x2x?x64xbf16>, tensor<65536x2x?x64xbf16>, tensor<65536x2x?x64xbf16>) -> tensor<65536x2x?x64xbf16>
  return %r : tensor<65536x2x?x64xbf16>
}

// -----

// 2^28 tokens of 4 query heads over 1 key head: 2^30 packed rows.
func.func @paged_tokens(%q: tensor<268435456x4x64xbf16>, %kc: tensor<?x16x1x64xbf16>, %vc: tensor<?x16x1x64xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<268435456x4x64xbf16> {
  // expected-error @+1 {{tensor-core kernel: T x Hq / Hkv = 1073741824 must be below 2^30}}
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu
      : (tensor<268435456x4x64xbf16>, tensor<?x16x1x64xbf16>, tensor<?x16x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<268435456x4x64xbf16>
  return %r : tensor<268435456x4x64xbf16>
}

// -----

// A table of 2^26 pages of 16 keys: sequences of up to 2^30 keys.
func.func @paged_capacity(%q: tensor<?x4x64xbf16>, %kc: tensor<?x16x2x64xbf16>, %vc: tensor<?x16x2x64xbf16>, %t: tensor<?x67108864xi32>, %l: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x64xbf16> {
  // expected-error @+1 {{tensor-core kernel: MB x P = 1073741824 must be below 2^30}}
  %r = gated_attention.paged_attention %q, %kc, %vc, %t, %l, %cu
      : (tensor<?x4x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x67108864xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x64xbf16>
  return %r : tensor<?x4x64xbf16>
}

// -----

func.func @backward(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x1073741824x64xbf16>, %v: tensor<1x2x1073741824x64xbf16>, %o: tensor<1x2x?x64xbf16>, %do: tensor<1x2x?x64xbf16>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x64xbf16>, tensor<1x2x1073741824x64xbf16>, tensor<1x2x1073741824x64xbf16>) {
  // expected-error @+1 {{no GPU lowering of the backward: Skv = 1073741824 must be below 2^30}}
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<1x2x?x64xbf16>, tensor<1x2x1073741824x64xbf16>, tensor<1x2x1073741824x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?xf32>)
      -> (tensor<1x2x?x64xbf16>, tensor<1x2x1073741824x64xbf16>, tensor<1x2x1073741824x64xbf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x?x64xbf16>, tensor<1x2x1073741824x64xbf16>, tensor<1x2x1073741824x64xbf16>
}

// -----

func.func @backward_batch(%q: tensor<70000x2x?x64xbf16>, %k: tensor<70000x2x?x64xbf16>, %v: tensor<70000x2x?x64xbf16>, %o: tensor<70000x2x?x64xbf16>, %do: tensor<70000x2x?x64xbf16>, %lse: tensor<70000x2x?xf32>) -> (tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>) {
  // expected-error @+1 {{no GPU lowering of the backward: B = 70000 must be at most 65535 (CUDA's grid y and z limit)}}
  %r:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse)
      : (tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>, tensor<70000x2x?xf32>)
      -> (tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>)
  return %r#0, %r#1, %r#2 : tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>, tensor<70000x2x?x64xbf16>
}

// -----

func.func @largest(%q: tensor<1x2x1073741823x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>) -> tensor<1x2x1073741823x64xbf16> {
  %r = gated_attention.attention %q, %k, %v : (tensor<1x2x1073741823x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x2x1073741823x64xbf16>
  return %r : tensor<1x2x1073741823x64xbf16>
}
