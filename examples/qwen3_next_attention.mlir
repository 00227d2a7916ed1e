// The gated attention of a Qwen3-Next full-attention layer: 16 query heads
// over 2 key/value heads (GQA 8), head dim 256, causal, an elementwise
// per-head sigmoid gate (the second half of each head of q_proj), bf16, any
// sequence length, scale 256^-0.5.
//
// Compile for the CPU and run against the float64 reference (from the
// repository root, after ./scripts/setup):
//   PYTHONPATH=python /usr/bin/python3 -m gated_attention.testing.run_example examples/qwen3_next_attention.mlir
// or lower it by hand:
//   build/bin/gated-attention-opt examples/qwen3_next_attention.mlir --gated-attention-to-llvm

func.func @qwen3_next_attention(%q: tensor<1x16x?x256xbf16>,
                                %k: tensor<1x2x?x256xbf16>,
                                %v: tensor<1x2x?x256xbf16>,
                                %g: tensor<1x16x?x256xbf16>)
    -> tensor<1x16x?x256xbf16> {
  %out = gated_attention.attention %q, %k, %v, %g {causal, scale = 0.0625 : f32}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
         tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
      -> tensor<1x16x?x256xbf16>
  return %out : tensor<1x16x?x256xbf16>
}
