// The README's worked example: the gated attention of a Qwen3-Next layer
// (16 query heads over 2 KV heads, head dim 256, causal, an elementwise
// sigmoid gate per head, bf16, any sequence length) and a @main that runs it.
//
//   build/bin/gated-attention-opt examples/qwen.mlir --gated-attention-to-llvm \
//     | /usr/lib/llvm-22/bin/mlir-runner -e main -entry-point-result=void \
//       -shared-libs=/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so,/usr/lib/llvm-22/lib/libomp.so

func.func @attn(%q: tensor<1x16x?x256xbf16>, %k: tensor<1x2x?x256xbf16>,
                %v: tensor<1x2x?x256xbf16>, %g: tensor<1x16x?x256xbf16>)
    -> tensor<1x16x?x256xbf16> {
  %o = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
         tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
      -> tensor<1x16x?x256xbf16>
  return %o : tensor<1x16x?x256xbf16>
}

func.func private @printMemrefF32(tensor<*xf32>)

// @attn on 4 queries and 4 keys whose scores are all equal, with value
// rows V[j] = j + 1 and a zero gate: causal query row i averages the values
// of keys 0..i, (i + 2) / 2, and sigmoid(0) halves that. Prints rows 0..3 of
// head 0, channels 0..3: 0.5, 0.75, 1, 1.25.
func.func @main() {
  %q = arith.constant dense<0.5> : tensor<1x16x4x256xbf16>
  %k = arith.constant dense<0.5> : tensor<1x2x4x256xbf16>
  %g = arith.constant dense<0.0> : tensor<1x16x4x256xbf16>
  %empty = tensor.empty() : tensor<1x2x4x256xbf16>
  %v = linalg.generic {
      indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%empty : tensor<1x2x4x256xbf16>) {
  ^bb0(%out: bf16):
    %j = linalg.index 2 : index
    %j32 = arith.index_cast %j : index to i32
    %jf = arith.sitofp %j32 : i32 to bf16
    %one = arith.constant 1.0 : bf16
    %vj = arith.addf %jf, %one : bf16
    linalg.yield %vj : bf16
  } -> tensor<1x2x4x256xbf16>
  %qd = tensor.cast %q : tensor<1x16x4x256xbf16> to tensor<1x16x?x256xbf16>
  %kd = tensor.cast %k : tensor<1x2x4x256xbf16> to tensor<1x2x?x256xbf16>
  %vd = tensor.cast %v : tensor<1x2x4x256xbf16> to tensor<1x2x?x256xbf16>
  %gd = tensor.cast %g : tensor<1x16x4x256xbf16> to tensor<1x16x?x256xbf16>
  %o = call @attn(%qd, %kd, %vd, %gd)
      : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
         tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
      -> tensor<1x16x?x256xbf16>
  %corner = tensor.extract_slice %o[0, 0, 0, 0] [1, 1, 4, 4] [1, 1, 1, 1]
      : tensor<1x16x?x256xbf16> to tensor<4x4xbf16>
  %empty32 = tensor.empty() : tensor<4x4xf32>
  %f32 = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%corner : tensor<4x4xbf16>) outs(%empty32 : tensor<4x4xf32>) {
  ^bb0(%x: bf16, %out: f32):
    %y = arith.extf %x : bf16 to f32
    linalg.yield %y : f32
  } -> tensor<4x4xf32>
  %print = tensor.cast %f32 : tensor<4x4xf32> to tensor<*xf32>
  call @printMemrefF32(%print) : (tensor<*xf32>) -> ()
  return
}
