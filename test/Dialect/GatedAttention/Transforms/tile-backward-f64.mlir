// The tiled backward rounds to and accumulates in f32: it refuses f64 ops,
// naming the lowering that takes them, as the tiled forward does
// (test/Pipelines/f64.mlir runs them through the reference lowering).
// RUN: gated-attention-opt %s --gated-attention-tile-backward -verify-diagnostics

func.func @f64(%q: tensor<1x2x8x8xf64>, %k: tensor<1x2x8x8xf64>, %v: tensor<1x2x8x8xf64>,
               %o: tensor<1x2x8x8xf64>, %do: tensor<1x2x8x8xf64>) -> tensor<1x2x8x8xf64> {
  // expected-error @+1 {{the tiled backward accumulates in f32 and does not take f64 ops: lower them with convert-gated-attention-backward-to-linalg first (--gated-attention-to-llvm does)}}
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do
      : (tensor<1x2x8x8xf64>, tensor<1x2x8x8xf64>, tensor<1x2x8x8xf64>, tensor<1x2x8x8xf64>, tensor<1x2x8x8xf64>) -> (tensor<1x2x8x8xf64>, tensor<1x2x8x8xf64>, tensor<1x2x8x8xf64>)
  return %0#0 : tensor<1x2x8x8xf64>
}
