// A softmax with no attention around it: nothing to raise.
func.func @f(%s: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %e = tensor.empty() : tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<8x16x16xf32>) outs(%e : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %p : tensor<8x16x16xf32>
}
