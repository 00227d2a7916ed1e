func.func @ones() -> tensor<0x9223372036854775807xbf16> {
  %c = arith.constant dense<1.0> : tensor<0x9223372036854775807xbf16>
  return %c : tensor<0x9223372036854775807xbf16>
}
