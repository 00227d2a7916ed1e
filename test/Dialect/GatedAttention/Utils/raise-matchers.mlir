// RUN: gated-attention-opt %s --split-input-file --test-gated-attention-raise-matchers --verify-diagnostics

// Each step of a whole chain, and the chain at its P V contraction: K and V
// repeated for GQA, K read transposed through the map, a scale by division,
// a bottom-right causal select (Sq = 8, Skv = 12: offset 4), the softmax
// decomposed, a SiLU gate in its own generic, added.
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @chain(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %g: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eb = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<1x2x12x16xf32>) outs(%eb : tensor<1x2x2x12x16xf32>) dimensions = [2]
  // expected-remark @below {{gqa repeat}}
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  // expected-remark @below {{gqa repeat}}
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %es = tensor.empty() : tensor<1x4x8x12xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x4x8x12xf32>) -> tensor<1x4x8x12xf32>
  // expected-remark @below {{batched matmul rhs transposed}}
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kr : tensor<1x4x8x16xf32>, tensor<1x4x12x16xf32>) outs(%zs : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  // expected-remark @below {{scale 2.500000e-01}}
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x4x8x12xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 4.0 : f32
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  // expected-remark @below {{causal mask}}
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
  // expected-remark @below {{softmax}}
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>) outs(%es : tensor<1x4x8x12xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<1x4x8x12xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  // expected-remark @below {{attention scale 2.500000e-01 causal; batched matmul}}
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
  // expected-remark @below {{gate #gated_attention.gate<silu> add map (d0, d1, d2, d3) -> (d0, d1, d2, d3)}}
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %act : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%eo : tensor<1x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %y : tensor<1x4x8x16xf32>
}

// -----

// Causal masks on Sq = 4, Skv = 6 (bottom-right offset 2), spelled as
// frontends do, and near misses that must not match.
#id = affine_map<(b, i, j) -> (b, i, j)>
func.func @masks(%s: tensor<2x4x6xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x6xf32>
  // select(j <= i + 2, s, -inf), i64 indices.
  // expected-remark @below {{causal mask}}
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %c2 = arith.constant 2 : i64
    %lim = arith.addi %ii, %c2 : i64
    %keep = arith.cmpi sle, %jj, %lim : i64
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // torch's additive form: s + select(i - j + 2 >= 0, 0, -inf).
  // expected-remark @below {{causal mask}}
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c2 = arith.constant 2 : index
    %d = arith.subi %i, %j : index
    %d2 = arith.addi %d, %c2 : index
    %c0 = arith.constant 0 : index
    %keep = arith.cmpi sge, %d2, %c0 : index
    %m = arith.select %keep, %zero, %ninf : f32
    %y = arith.addf %m, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // Top-left (torch's is_causal, j <= i): not the bottom-right mask when
  // Sq < Skv.
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %keep = arith.cmpi sle, %j, %i : index
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // Keeps the masked side: j > i + 2 kept.
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c2 = arith.constant 2 : index
    %lim = arith.addi %i, %c2 : index
    %after = arith.cmpi sgt, %j, %lim : index
    %y = arith.select %after, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // Depends on the batch index: not a causal mask.
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = linalg.index 0 : index
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c2 = arith.constant 2 : index
    %lim0 = arith.addi %i, %c2 : index
    %lim = arith.addi %lim0, %n : index
    %keep = arith.cmpi sle, %j, %lim : index
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // An unsigned comparison of a side that may be negative (i - 3 wraps):
  // not read as a signed one.
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c5 = arith.constant 5 : index
    %jm = arith.subi %j, %c5 : index
    %c3 = arith.constant 3 : index
    %im = arith.subi %i, %c3 : index
    %keep = arith.cmpi ule, %jm, %im : index
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  return %a, %b, %c, %d, %f, %h : tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>
}

// -----

// Scales (times, divided by, a constant truncated from f64 as torch-mlir
// writes it) and softmax over the last dimension only.
#id = affine_map<(b, i, j) -> (b, i, j)>
func.func @scales_softmax(%s: tensor<2x4x6xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>) {
  %e = tensor.empty() : tensor<2x4x6xf32>
  // expected-remark @below {{scale 1.250000e-01}}
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.constant 0.125 : f64
    %t = arith.truncf %c : f64 to f32
    %y = arith.mulf %t, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // Not a constant factor.
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // expected-remark @below {{softmax}}
  %c = linalg.softmax dimension(2) ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %d = linalg.softmax dimension(1) ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return %a, %b, %c, %d : tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>
}

// -----

// Gate combines: headwise (the gate without its last dimension), the
// activation in the combine's body; the attention operand read through a
// non-identity map is not a combine.
#id = affine_map<(b, i, d) -> (b, i, d)>
#head = affine_map<(b, i, d) -> (b, i)>
#col = affine_map<(b, i, d) -> (b, d)>
func.func @gates(%o: tensor<8x16x32xf32>, %g: tensor<8x16xf32>, %gc: tensor<8x32xf32>) -> (tensor<8x16x32xf32>, tensor<8x16x32xf32>) {
  %e = tensor.empty() : tensor<8x16x32xf32>
  // expected-remark @below {{gate #gated_attention.gate<ns_sigmoid> mul map (d0, d1, d2) -> (d0, d1)}}
  %a = linalg.generic {indexing_maps = [#id, #head, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %g : tensor<8x16x32xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %half = arith.constant 0.5 : f32
    %n = arith.negf %y : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %sg = arith.divf %one, %den : f32
    %hs = arith.mulf %half, %sg : f32
    %act = arith.addf %hs, %half : f32
    %r = arith.mulf %x, %act : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32xf32>
  // A gate per column (no row dimension): not a gate the op has.
  %b = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %gc : tensor<8x16x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %y : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %sg = arith.divf %one, %den : f32
    %r = arith.mulf %x, %sg : f32
    linalg.yield %r : f32
  } -> tensor<8x16x32xf32>
  return %a, %b : tensor<8x16x32xf32>, tensor<8x16x32xf32>
}

// -----

// Causal masks spelled with unsigned comparisons and casts (Sq = 4, Skv = 6,
// offset 2): both sides of an unsigned comparison, and every cast, must be
// provably non-negative / in range over the iteration domain.
#id = affine_map<(b, i, j) -> (b, i, j)>
func.func @unsigned_masks(%s: tensor<2x4x6xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x4x6xf32>
  // j <u i + 3 on i32 zero-extending casts.
  // expected-remark @below {{causal mask}}
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %ii = arith.index_castui %i : index to i32
    %jj = arith.index_castui %j : index to i32
    %c3 = arith.constant 3 : i32
    %lim = arith.addi %ii, %c3 : i32
    %keep = arith.cmpi ult, %jj, %lim : i32
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // j - i + 3 <=u 5: the left side is in [0, 8], never wraps.
  // expected-remark @below {{causal mask}}
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %d = arith.subi %j, %i : index
    %d3 = arith.addi %d, %c3 : index
    %keep = arith.cmpi ule, %d3, %c5 : index
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // Swapped, through i16 and zero extension to i64: i + 2 <u j masked.
  // expected-remark @below {{causal mask}}
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %i16 = arith.index_castui %i : index to i16
    %j16 = arith.index_castui %j : index to i16
    %i64 = arith.extui %i16 : i16 to i64
    %j64 = arith.extui %j16 : i16 to i64
    %c2 = arith.constant 2 : i64
    %lim = arith.addi %i64, %c2 : i64
    %masked = arith.cmpi ult, %lim, %j64 : i64
    %y = arith.select %masked, %ninf, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // Near miss: j in [0, 5] does not fit in i3 ([-4, 3]): the cast wraps.
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %ii = arith.index_cast %i : index to i3
    %jj = arith.index_cast %j : index to i3
    %c2 = arith.constant 2 : i3
    %lim = arith.addi %ii, %c2 : i3
    %keep = arith.cmpi sle, %jj, %lim : i3
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // Near miss: j - 2 may be negative; zero-extending it does not give j - 2.
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %c2 = arith.constant 2 : i32
    %jm = arith.subi %jj, %c2 : i32
    %jm64 = arith.extui %jm : i32 to i64
    %ii64 = arith.extui %ii : i32 to i64
    %keep = arith.cmpi sle, %jm64, %ii64 : i64
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  // Near miss: i + 2 computed in i2 wraps (i + 2 up to 5).
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%e : tensor<2x4x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %c2 = arith.constant 2 : i64
    %lim = arith.addi %ii, %c2 : i64
    %lim4 = arith.trunci %lim : i64 to i3
    %lim64 = arith.extsi %lim4 : i3 to i64
    %keep = arith.cmpi sle, %jj, %lim64 : i64
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<2x4x6xf32>
  return %a, %b, %c, %d, %f, %h : tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>
}
