// RUN: gated-attention-opt %s --split-input-file --gated-attention-raise --canonicalize | FileCheck %s

// Heads folded into the batch, named ops: batch_matmul with an explicit
// transpose of K, a scale by a constant, linalg.softmax, the sigmoid gate in
// the combine's body.
// CHECK-LABEL: func.func @batch_matmul_softmax
// CHECK-SAME:    (%[[Q:.+]]: tensor<8x16x32xf32>, %[[K:.+]]: tensor<8x16x32xf32>, %[[V:.+]]: tensor<8x16x32xf32>, %[[G:.+]]: tensor<8x16x32xf32>)
// CHECK-DAG:     %[[Q4:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1], [2], [3]{{\]}} {{.*}} into tensor<1x8x16x32xf32>
// CHECK-DAG:     %[[K4:.+]] = tensor.expand_shape %[[K]]
// CHECK-DAG:     %[[V4:.+]] = tensor.expand_shape %[[V]]
// CHECK-DAG:     %[[G4:.+]] = tensor.expand_shape %[[G]]
// CHECK:         %[[A:.+]] = gated_attention.attention %[[Q4]], %[[K4]], %[[V4]], %[[G4]] {scale = 1.250000e-01 : f32}
// CHECK-NOT:     linalg.
// CHECK:         %[[R:.+]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1], [2], [3]{{\]}} : tensor<1x8x16x32xf32> into tensor<8x16x32xf32>
// CHECK:         return %[[R]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @batch_matmul_softmax(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.125 : f32
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
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

// [B, H, S, D] generics as a frontend generalizes them; the softmax
// decomposed (max, exp(x - max), sum, divide); a causal select on
// linalg.index for Sq = 8 < Skv = 12 (offset 4); K and V repeated from 2 to
// 4 heads for GQA; a SiLU gate in its own generic, added.
// CHECK-LABEL: func.func @generic_gqa_causal
// CHECK-SAME:    (%[[Q:.+]]: tensor<1x4x8x16xf32>, %[[K:.+]]: tensor<1x2x12x16xf32>, %[[V:.+]]: tensor<1x2x12x16xf32>, %[[G:.+]]: tensor<1x4x8x16xf32>)
// CHECK:         %[[A:.+]] = gated_attention.attention %[[Q]], %[[K]], %[[V]], %[[G]] {causal, combine = #gated_attention.combine<add>, gate = #gated_attention.gate<silu>, scale = 2.500000e-01 : f32}
// CHECK-SAME:      (tensor<1x4x8x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
// CHECK:         return %[[A]]
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @generic_gqa_causal(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c4 = arith.constant 4 : index
    %lim = arith.addi %i, %c4 : index
    %masked = arith.cmpi ugt, %j, %lim : index
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g : tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %y = arith.mulf %x, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// HF transformers' eager attention: the scale and an additive mask of the
// lowest finite f32 (its `torch.finfo(dtype).min`) in one generic. With
// Skv >= Sq every row sees a key, where the lowest value masks as -inf.
// CHECK-LABEL: func.func @scaled_mask_lowest
// CHECK:         %[[A:.+]] = gated_attention.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} {causal, combine = #gated_attention.combine<add>, gate = #gated_attention.gate<silu>, scale = 2.500000e-01 : f32}
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[A]]
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @scaled_mask_lowest(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 2.500000e-01 : f32
    %sx = arith.mulf %x, %c : f32
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %d = arith.subi %jj, %ii : i64
    %lim = arith.constant 5 : i64
    %masked = arith.cmpi sge, %d, %lim : i64
    %low = arith.constant -3.40282347E+38 : f32
    %zero2 = arith.constant 0.0 : f32
    %add = arith.select %masked, %low, %zero2 : f32
    %y = arith.addf %sx, %add : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g : tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %y = arith.mulf %x, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// The same with Sq = 12 > Skv = 8: the first rows see no key, where the
// lowest value would average V and the op gives 0, so nothing is raised.
// (With -inf the mask is the op's, and @scaled_mask_inf is raised.)
// CHECK-LABEL: func.func @lowest_rows_without_keys
// CHECK-NOT:     gated_attention.attention
// CHECK:         return
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @lowest_rows_without_keys(%q: tensor<1x4x12x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %g: tensor<1x4x12x16xf32>) -> tensor<1x4x12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x8x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x8x16xf32>) outs(%eb : tensor<1x2x2x8x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x8x16xf32>) outs(%eb : tensor<1x2x2x8x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %es = tensor.empty() : tensor<1x4x12x8xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x12x8xf32>) -> tensor<1x4x12x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x12x16xf32>, tensor<1x4x8x16xf32>) outs(%zs : tensor<1x4x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x12x8xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x12x8xf32>) outs(%es : tensor<1x4x12x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 2.500000e-01 : f32
    %sx = arith.mulf %x, %c : f32
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %d = arith.subi %jj, %ii : i64
    %lim = arith.constant -3 : i64
    %masked = arith.cmpi sge, %d, %lim : i64
    %low = arith.constant -3.40282347E+38 : f32
    %zero2 = arith.constant 0.0 : f32
    %add = arith.select %masked, %low, %zero2 : f32
    %y = arith.addf %sx, %add : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12x8xf32>
  %er = tensor.empty() : tensor<1x4x12xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x12xf32>) -> tensor<1x4x12xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x12x8xf32>) outs(%mi : tensor<1x4x12xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x12x8xf32>, tensor<1x4x12xf32>) outs(%es : tensor<1x4x12x8xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12x8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x12xf32>) -> tensor<1x4x12xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x12x8xf32>) outs(%si : tensor<1x4x12xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x12x8xf32>, tensor<1x4x12xf32>) outs(%es : tensor<1x4x12x8xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12x8xf32>
  %eo = tensor.empty() : tensor<1x4x12x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x12x16xf32>) -> tensor<1x4x12x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x12x8xf32>, tensor<1x4x8x16xf32>) outs(%zo : tensor<1x4x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x12x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g : tensor<1x4x12x16xf32>) outs(%eo : tensor<1x4x12x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %y = arith.mulf %x, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x12x16xf32>, tensor<1x4x12x16xf32>) outs(%eo : tensor<1x4x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x12x16xf32>
  return %y : tensor<1x4x12x16xf32>
}

// -----

// CHECK-LABEL: func.func @scaled_mask_inf
// CHECK:         gated_attention.attention {{.*}}causal
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @scaled_mask_inf(%q: tensor<1x4x12x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %g: tensor<1x4x12x16xf32>) -> tensor<1x4x12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x8x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x8x16xf32>) outs(%eb : tensor<1x2x2x8x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x8x16xf32>) outs(%eb : tensor<1x2x2x8x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %es = tensor.empty() : tensor<1x4x12x8xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x12x8xf32>) -> tensor<1x4x12x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x12x16xf32>, tensor<1x4x8x16xf32>) outs(%zs : tensor<1x4x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x12x8xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x12x8xf32>) outs(%es : tensor<1x4x12x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 2.500000e-01 : f32
    %sx = arith.mulf %x, %c : f32
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %d = arith.subi %jj, %ii : i64
    %lim = arith.constant -3 : i64
    %masked = arith.cmpi sge, %d, %lim : i64
    %low = arith.constant 0xFF800000 : f32
    %zero2 = arith.constant 0.0 : f32
    %add = arith.select %masked, %low, %zero2 : f32
    %y = arith.addf %sx, %add : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12x8xf32>
  %er = tensor.empty() : tensor<1x4x12xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x12xf32>) -> tensor<1x4x12xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x12x8xf32>) outs(%mi : tensor<1x4x12xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x12x8xf32>, tensor<1x4x12xf32>) outs(%es : tensor<1x4x12x8xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12x8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x12xf32>) -> tensor<1x4x12xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x12x8xf32>) outs(%si : tensor<1x4x12xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x12x8xf32>, tensor<1x4x12xf32>) outs(%es : tensor<1x4x12x8xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12x8xf32>
  %eo = tensor.empty() : tensor<1x4x12x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x12x16xf32>) -> tensor<1x4x12x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x12x8xf32>, tensor<1x4x8x16xf32>) outs(%zo : tensor<1x4x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x12x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g : tensor<1x4x12x16xf32>) outs(%eo : tensor<1x4x12x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %y = arith.mulf %x, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x12x16xf32>, tensor<1x4x12x16xf32>) outs(%eo : tensor<1x4x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x12x16xf32>
  return %y : tensor<1x4x12x16xf32>
}

// -----

// The causal mask of @generic_gqa_causal spelled with an unsigned
// comparison of zero-extended i64 indices, operands swapped: i + 4 >=u j
// keeps a score. Both sides are non-negative and no cast wraps, so it is
// the same mask.
// CHECK-LABEL: func.func @unsigned_i64_causal
// CHECK-SAME:    (%[[Q:.+]]: tensor<1x4x8x16xf32>, %[[K:.+]]: tensor<1x2x12x16xf32>, %[[V:.+]]: tensor<1x2x12x16xf32>, %[[G:.+]]: tensor<1x4x8x16xf32>)
// CHECK:         %[[A:.+]] = gated_attention.attention %[[Q]], %[[K]], %[[V]], %[[G]] {causal, combine = #gated_attention.combine<add>, gate = #gated_attention.gate<silu>, scale = 2.500000e-01 : f32}
// CHECK-NOT:     linalg.
// CHECK:         return %[[A]]
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @unsigned_i64_causal(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %ii = arith.index_castui %i : index to i64
    %jj = arith.index_castui %j : index to i64
    %c4 = arith.constant 4 : i64
    %lim = arith.addi %ii, %c4 : i64
    %keep = arith.cmpi uge, %lim, %jj : i64
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g : tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %y = arith.mulf %x, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// Near misses stay untouched. The max and sum reduce over the queries
// (dimension 2), not the keys.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT:   gated_attention.attention
// CHECK:         return
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#col = affine_map<(b, h, i, j) -> (b, h, j)>
func.func @softmax_over_queries(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c4 = arith.constant 4 : index
    %lim = arith.addi %i, %c4 : index
    %masked = arith.cmpi ugt, %j, %lim : index
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x12xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x12xf32>) -> tensor<1x4x12xf32>
  %mx = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x12xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12xf32>
  %ex = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x12xf32>) -> tensor<1x4x12xf32>
  %sum = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x12xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x12xf32>
  %p = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g : tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %y = arith.mulf %x, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}


// -----

// The mask hides keys past i + 5, not the causal i + (Skv - Sq) = i + 4.
// CHECK-LABEL: func.func @mask_not_causal
// CHECK-NOT:   gated_attention.attention
// CHECK:         return
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @mask_not_causal(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c4 = arith.constant 5 : index
    %lim = arith.addi %i, %c4 : index
    %masked = arith.cmpi ugt, %j, %lim : index
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g : tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %y = arith.mulf %x, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}


// -----

// The gate is computed from the scores.
// CHECK-LABEL: func.func @gate_from_scores
// CHECK-NOT:   gated_attention.attention
// CHECK:         return
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @gate_from_scores(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c4 = arith.constant 4 : index
    %lim = arith.addi %i, %c4 : index
    %masked = arith.cmpi ugt, %j, %lim : index
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %gp = tensor.pad %ms low[0, 0, 0, 0] high[0, 0, 0, 4] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x4x8x12xf32> to tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%gp : tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %y = arith.mulf %x, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// Attention without a gate (a graph gated elsewhere, G2-G5) becomes the op
// without its gate operand.
// CHECK-LABEL: func.func @no_gate
// CHECK:         gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.250000e-01 : f32} : (tensor<1x8x16x32xf32>, tensor<1x8x16x32xf32>, tensor<1x8x16x32xf32>) -> tensor<1x8x16x32xf32>
// CHECK-NOT:     linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @no_gate(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.125 : f32
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  return %o : tensor<8x16x32xf32>
}

// -----

// nanoGPT's masked_fill: `masked_fill(bias[.., 2:6, :6] == 0, -inf)` on
// scores scaled in the same generic, the condition read from a constant
// buffer (a lower triangle of ones, sliced): checked element by element
// (Sq = 4, Skv = 6, the buffer's rows 2..5 are the diagonal j <= i + 2).
// CHECK-LABEL: func.func @selected_buffer
// CHECK:         gated_attention.attention {{.*}} {causal, scale = 5.000000e-01 : f32}
// CHECK-NOT:     linalg.softmax
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ij = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @selected_buffer(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %g: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %buf = arith.constant dense<[[[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]]> : tensor<1x8x8xf32>
  %tri = tensor.extract_slice %buf[0, 2, 0] [1, 4, 6] [1, 1, 1] : tensor<1x8x8xf32> to tensor<4x6xf32>
  %e0 = tensor.empty() : tensor<2x8x6xf32>
  %kt = linalg.transpose ins(%k : tensor<2x6x8xf32>) outs(%e0 : tensor<2x8x6xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<2x4x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x6xf32>) outs(%z1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %ms = linalg.generic {indexing_maps = [#id3, #ij, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %tri : tensor<2x4x6xf32>, tensor<4x6xf32>) outs(%e1 : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %c = arith.constant 5.000000e-01 : f32
    %sx = arith.mulf %x, %c : f32
    %zf = arith.constant 0.0 : f32
    %hidden = arith.cmpf oeq, %m, %zf : f32
    %low = arith.constant 0xFF800000 : f32
    %y = arith.select %hidden, %low, %sx : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%ms : tensor<2x4x6xf32>) outs(%e1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%z2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%e2 : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %sg, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// The same buffer one diagonal further (rows see a key more): not the
// op's mask, so nothing is raised.
// CHECK-LABEL: func.func @selected_buffer_off_by_one
// CHECK-NOT:     gated_attention.attention
// CHECK:         linalg.softmax
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ij = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @selected_buffer_off_by_one(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %g: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %buf = arith.constant dense<[[[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]]> : tensor<1x8x8xf32>
  %tri = tensor.extract_slice %buf[0, 2, 0] [1, 4, 6] [1, 1, 1] : tensor<1x8x8xf32> to tensor<4x6xf32>
  %e0 = tensor.empty() : tensor<2x8x6xf32>
  %kt = linalg.transpose ins(%k : tensor<2x6x8xf32>) outs(%e0 : tensor<2x8x6xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<2x4x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x6xf32>) outs(%z1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %ms = linalg.generic {indexing_maps = [#id3, #ij, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %tri : tensor<2x4x6xf32>, tensor<4x6xf32>) outs(%e1 : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %zf = arith.constant 0.0 : f32
    %hidden = arith.cmpf oeq, %m, %zf : f32
    %low = arith.constant 0xFF800000 : f32
    %y = arith.select %hidden, %low, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%ms : tensor<2x4x6xf32>) outs(%e1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%z2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%e2 : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %sg, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// The causal mask as an added constant -inf triangle (Sq = 4, Skv = 6: key j
// visible up to i + 2), no scale (the op gets scale 1).
// CHECK-LABEL: func.func @added_triangle
// CHECK:         gated_attention.attention {{.*}} {causal, scale = 1.000000e+00 : f32}
// CHECK-NOT:     linalg.softmax
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ij = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @added_triangle(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %g: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %tri = arith.constant dense<[[0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<4x6xf32>
  %e0 = tensor.empty() : tensor<2x8x6xf32>
  %kt = linalg.transpose ins(%k : tensor<2x6x8xf32>) outs(%e0 : tensor<2x8x6xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<2x4x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x6xf32>) outs(%z1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %ms = linalg.generic {indexing_maps = [#id3, #ij, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %tri : tensor<2x4x6xf32>, tensor<4x6xf32>) outs(%e1 : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %y = arith.addf %x, %m : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%ms : tensor<2x4x6xf32>) outs(%e1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%z2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%e2 : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %sg, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// A triangle one diagonal off (key j visible up to i + 1) is not the causal
// mask: untouched.
// CHECK-LABEL: func.func @triangle_off_by_one
// CHECK-NOT:     gated_attention.attention
// CHECK:         return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ij = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @triangle_off_by_one(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %g: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %tri = arith.constant dense<[[0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000]]> : tensor<4x6xf32>
  %e0 = tensor.empty() : tensor<2x8x6xf32>
  %kt = linalg.transpose ins(%k : tensor<2x6x8xf32>) outs(%e0 : tensor<2x8x6xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<2x4x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x6xf32>) outs(%z1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %ms = linalg.generic {indexing_maps = [#id3, #ij, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %tri : tensor<2x4x6xf32>, tensor<4x6xf32>) outs(%e1 : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %y = arith.addf %x, %m : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%ms : tensor<2x4x6xf32>) outs(%e1 : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%z2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%e2 : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %sg, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// A headwise gate ([B·H, S]: one value per row, read through the identity
// map without the last dimension), sigmoid in the combine's body: the op
// gets a [B, H, S, 1] gate.
// CHECK-LABEL: func.func @headwise_heads_in_batch
// CHECK-SAME:    %[[G:[^:]+]]: tensor<8x16xf32>)
// CHECK:         %[[G4:.+]] = tensor.expand_shape %[[G]] {{\[}}[0, 1], [2, 3]{{\]}} {{.*}} : tensor<8x16xf32> into tensor<1x8x16x1xf32>
// CHECK:         gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[G4]] {scale = 1.250000e-01 : f32} : (tensor<1x8x16x32xf32>, tensor<1x8x16x32xf32>, tensor<1x8x16x32xf32>, tensor<1x8x16x1xf32>) -> tensor<1x8x16x32xf32>
// CHECK-NOT:     linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @headwise_heads_in_batch(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.125 : f32
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<8x16x32xf32>, tensor<8x16xf32>) outs(%e2 : tensor<8x16x32xf32>) {
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

// The same with the gate's SiLU in a producer over [B·H, S], added.
// CHECK-LABEL: func.func @headwise_producer
// CHECK:         gated_attention.attention {{.+}} {combine = #gated_attention.combine<add>, gate = #gated_attention.gate<silu>, scale = 1.250000e-01 : f32} : ({{.+}}, tensor<1x8x16x1xf32>) -> tensor<1x8x16x32xf32>
// CHECK-NOT:     linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @headwise_producer(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.125 : f32
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %eg = tensor.empty() : tensor<8x16xf32>
  %act = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<8x16xf32>) outs(%eg : tensor<8x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %r = arith.divf %x, %den : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %y = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %act : tensor<8x16x32xf32>, tensor<8x16xf32>) outs(%e2 : tensor<8x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32xf32>
  return %y : tensor<8x16x32xf32>
}

// -----

// A gate broadcast along the rows (one value per column) is no gate layout
// of the op: the attention is raised, the combine stays.
// CHECK-LABEL: func.func @gate_per_column
// CHECK:         %[[A:.+]] = gated_attention.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} {scale = 1.250000e-01 : f32}
// CHECK:         linalg.generic
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col3 = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @gate_per_column(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.125 : f32
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<8x16x32xf32>, tensor<8x32xf32>) outs(%e2 : tensor<8x16x32xf32>) {
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

// One gate for all heads ([B, S, D], the heads broadcast): a shared gate
// [B, 1, S, D].
// CHECK-LABEL: func.func @shared_elementwise
// CHECK-SAME:    %[[G:[^:]+]]: tensor<1x8x16xf32>)
// CHECK:         %[[G4:.+]] = tensor.expand_shape %[[G]] {{\[}}[0, 1], [2], [3]{{\]}} {{.*}} into tensor<1x1x8x16xf32>
// CHECK:         gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[G4]] {causal, scale = 2.500000e-01 : f32}
// CHECK-NOT:     linalg.
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
#gmap = affine_map<(b, h, i, j) -> (b, i, j)>
func.func @shared_elementwise(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c4 = arith.constant 4 : index
    %lim = arith.addi %i, %c4 : index
    %masked = arith.cmpi ugt, %j, %lim : index
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #gmap, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %g : tensor<1x4x8x16xf32>, tensor<1x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %a, %sg : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// One gate value per row for all heads ([B, S]): a shared headwise gate
// [B, 1, S, 1].
// CHECK-LABEL: func.func @shared_headwise
// CHECK-SAME:    %[[G:[^:]+]]: tensor<1x8xf32>)
// CHECK:         %[[G4:.+]] = tensor.expand_shape %[[G]] {{\[}}[0, 1], [2, 3]{{\]}} {{.*}} into tensor<1x1x8x1xf32>
// CHECK:         gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[G4]] {causal, scale = 2.500000e-01 : f32}
// CHECK-NOT:     linalg.
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
#gmap = affine_map<(b, h, i, j) -> (b, i)>
func.func @shared_headwise(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x8xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c4 = arith.constant 4 : index
    %lim = arith.addi %i, %c4 : index
    %masked = arith.cmpi ugt, %j, %lim : index
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #gmap, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %g : tensor<1x4x8x16xf32>, tensor<1x8xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %a, %sg : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// Headwise per head on [B, H, S, D]: [B, H, S] becomes [B, H, S, 1].
// CHECK-LABEL: func.func @headwise_4d
// CHECK-SAME:    %[[G:[^:]+]]: tensor<1x4x8xf32>)
// CHECK:         %[[G4:.+]] = tensor.expand_shape %[[G]] {{\[}}[0], [1], [2, 3]{{\]}} {{.*}} into tensor<1x4x8x1xf32>
// CHECK:         gated_attention.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[G4]] {causal, scale = 2.500000e-01 : f32}
// CHECK-NOT:     linalg.
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
#gmap = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @headwise_4d(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c4 = arith.constant 4 : index
    %lim = arith.addi %i, %c4 : index
    %masked = arith.cmpi ugt, %j, %lim : index
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #gmap, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %g : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %a, %sg : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// A gate read through a permutation ([B, S, H], the paper's headwise gate
// in its [B, S, H, D] layout) is folded transposed into the op's order.
// CHECK-LABEL: func.func @gate_transposed
// CHECK-SAME:    %[[G:[a-z0-9]+]]: tensor<1x8x4xf32>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[G]] : tensor<1x8x4xf32>) outs(%{{.+}} : tensor<1x4x8xf32>) permutation = [0, 2, 1]
// CHECK:         %[[E:.+]] = tensor.expand_shape %[[T]] {{\[}}[0], [1], [2, 3]]
// CHECK:         %[[R:.+]] = gated_attention.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[E]] {causal, scale = 2.500000e-01 : f32}
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
#gmap = affine_map<(b, h, i, j) -> (b, i, h)>
func.func @gate_transposed(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x8x4xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %ms = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c4 = arith.constant 4 : index
    %lim = arith.addi %i, %c4 : index
    %masked = arith.cmpi ugt, %j, %lim : index
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %er = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x4x8x12xf32>) outs(%si : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, d, j) -> (b, h, i, j)>, affine_map<(b, h, i, d, j) -> (b, h, j, d)>, affine_map<(b, h, i, d, j) -> (b, h, i, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %vr : tensor<1x4x8x12xf32>, tensor<1x4x12x16xf32>) outs(%zo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #gmap, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %g : tensor<1x4x8x16xf32>, tensor<1x8x4xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %b : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %a, %sg : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// The op takes dense tensors: attention over a sparse (encoded) query is
// left as it is.
// CHECK-LABEL: func.func @sparse_query
// CHECK-NOT:     gated_attention.attention
// CHECK:         linalg.softmax
// CHECK-NOT:     gated_attention.attention
// CHECK:         return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#sp = #sparse_tensor.encoding<{ map = (d0, d1, d2) -> (d0 : dense, d1 : dense, d2 : compressed) }>
func.func @sparse_query(%q: tensor<8x16x32xf32, #sp>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32, #sp>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.125 : f32
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
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

// A sparse gate is not fused: the ungated op is raised, the combine stays.
// CHECK-LABEL: func.func @sparse_gate
// CHECK:         gated_attention.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} {scale
// CHECK:         linalg.generic
// CHECK:         math.exp
// CHECK:         return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#sp = #sparse_tensor.encoding<{ map = (d0, d1, d2) -> (d0 : dense, d1 : dense, d2 : compressed) }>
func.func @sparse_gate(%q: tensor<8x16x32xf32>, %k: tensor<8x16x32xf32>, %v: tensor<8x16x32xf32>, %g: tensor<8x16x32xf32, #sp>) -> tensor<8x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x32xf32>) outs(%e0 : tensor<8x32x16xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x16x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x32xf32>, tensor<8x32x16xf32>) outs(%z1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.125 : f32
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<8x16x16xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<8x16x16xf32>) outs(%e1 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x32xf32>) outs(%z2 : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<8x16x32xf32>, tensor<8x16x32xf32, #sp>) outs(%e2 : tensor<8x16x32xf32>) {
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
