// RUN: gated-attention-opt %s --load-dialect-plugin=%gate_variants_plugin \
// RUN:   --split-input-file --gated-attention-raise --canonicalize | FileCheck %s
// The plugin's folding pattern runs inside the stock --gated-attention-raise:
// unfused attention followed by the plugin's activations becomes one op
// carrying the plugin's gate attribute. Heads are folded into the batch
// ([B·H, S, D], named ops), as in test/Dialect/GatedAttention/Transforms/raise.mlir.

// tanh in the combine's body, multiplied.
// CHECK-LABEL: func.func @tanh_in_combine
// CHECK:         %[[A:.+]] = gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {gate = #gate_variants.tanh, scale = 1.000000e+00 : f32}
// CHECK:         tensor.collapse_shape %[[A]]
// CHECK-NOT:     linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @tanh_in_combine(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<8x16x32xf32>, tensor<8x16x32xf32>) outs(%e2 : tensor<8x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %t = math.tanh %b : f32
    %r = arith.mulf %a, %t : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32xf32>
  return %y : tensor<8x16x32xf32>
}

// -----

// sigmoid(g * 0.5) in a producer of the gate (temperature 2), added.
// CHECK-LABEL: func.func @temperature_in_producer
// CHECK:         gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {combine = #gated_attention.combine<add>, gate = #gate_variants.sigmoid<temperature = 2.000000e+00 : f32>, scale = 1.000000e+00 : f32}
// CHECK-NOT:     linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @temperature_in_producer(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %act = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g : tensor<8x16x32xf32>) outs(%e2 : tensor<8x16x32xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %c = arith.constant 0.5 : f32
    %t = arith.mulf %x, %c : f32
    %n = arith.negf %t : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %sg = arith.divf %one, %den : f32
    linalg.yield %sg : f32
  } -> tensor<8x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %act : tensor<8x16x32xf32>, tensor<8x16x32xf32>) outs(%e2 : tensor<8x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %b, %a : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32xf32>
  return %y : tensor<8x16x32xf32>
}

// -----

// sigmoid(g / 4) in the combine's body.
// CHECK-LABEL: func.func @temperature_divided
// CHECK:         gated_attention.attention {{.+}} {gate = #gate_variants.sigmoid<temperature = 4.000000e+00 : f32>, scale = 1.000000e+00 : f32}
// CHECK-NOT:     linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @temperature_divided(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<8x16x32xf32>, tensor<8x16x32xf32>) outs(%e2 : tensor<8x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %c = arith.constant 4.0 : f32
    %t = arith.divf %b, %c : f32
    %n = arith.negf %t : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %a, %sg : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32xf32>
  return %y : tensor<8x16x32xf32>
}

// -----

// A plain sigmoid stays the built-in gate (the plugin's matcher declines temperature 1).
// CHECK-LABEL: func.func @builtin_sigmoid
// CHECK:         gated_attention.attention {{.+}} {scale = 1.000000e+00 : f32}
// CHECK-NOT:     gate_variants
// CHECK-NOT:     linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @builtin_sigmoid(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<8x16x32xf32>, tensor<8x16x32xf32>) outs(%e2 : tensor<8x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %a, %sg : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32xf32>
  return %y : tensor<8x16x32xf32>
}

// -----

// tanh(2 g) is no one's gate: the attention is raised without it and the combine stays.
// CHECK-LABEL: func.func @unknown_activation
// CHECK:         %[[A:.+]] = gated_attention.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} {scale = 1.000000e+00 : f32}
// CHECK:         %[[O:.+]] = tensor.collapse_shape %[[A]]
// CHECK:         linalg.generic {{.+}} ins(%[[O]], %{{.+}} :
// CHECK:           math.tanh
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @unknown_activation(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<8x16x32xf32>, tensor<8x16x32xf32>) outs(%e2 : tensor<8x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %two = arith.constant 2.0 : f32
    %x2 = arith.mulf %b, %two : f32
    %t = math.tanh %x2 : f32
    %r = arith.mulf %a, %t : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32xf32>
  return %y : tensor<8x16x32xf32>
}
