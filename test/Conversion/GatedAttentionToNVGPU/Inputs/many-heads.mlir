// More query heads than CUDA's grid y dimension holds.
func.func @f(%q: tensor<1x70000x8x16xf16>, %k: tensor<1x70000x8x16xf16>, %v: tensor<1x70000x8x16xf16>) -> tensor<1x70000x8x16xf16> {
  %r = gated_attention.attention %q, %k, %v : (tensor<1x70000x8x16xf16>, tensor<1x70000x8x16xf16>, tensor<1x70000x8x16xf16>) -> tensor<1x70000x8x16xf16>
  return %r : tensor<1x70000x8x16xf16>
}
