// Found by the fuzzer: nothing verifies a layout under this name, and
// translation to LLVM IR crashed on its f16 entry (a dense pair expected).
module attributes {flti.dl_spec = #dlti.dl_spec<f16 = 32 : i64>} {
  func.func @f(%q: tensor<8x7x4x64xf32>, %k: tensor<8x7x0x64xf32>,
               %v: tensor<8x7x0x64xf32>) -> tensor<8x7x4x64xf32> {
    %0 = gated_attention.attention %q, %k, %v
        : (tensor<8x7x4x64xf32>, tensor<8x7x0x64xf32>, tensor<8x7x0x64xf32>) -> tensor<8x7x4x64xf32>
    return %0 : tensor<8x7x4x64xf32>
  }
}
