func.func @ones() -> tensor<1099511627776x256xbf16> {
  %c = arith.constant dense<1.0> : tensor<1099511627776x256xbf16>
  return %c : tensor<1099511627776x256xbf16>
}
