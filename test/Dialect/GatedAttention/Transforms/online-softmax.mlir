// RUN: gated-attention-opt %s --split-input-file \
// RUN:   --test-gated-attention-online-softmax=key-block=16 --canonicalize --cse | FileCheck %s

// The decomposition patterns alone, on whole (untiled) ops.

// Dynamic rows without a static bound: batches and heads become loops, one
// head per iteration, and the tiles keep their dynamic row count (no
// padding of the query).
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<2x4x?x16xf32>
// CHECK: scf.for %[[B:.+]] = %c0 to %c2 step %c1
// CHECK: scf.for %[[H:.+]] = %c0 to %c4 step %c1
// CHECK: %[[QT:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], 0, 0] [1, 1, %{{.+}}, 16]
// CHECK-SAME: to tensor<?x16xf32>
// CHECK: scf.for {{.+}} -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, i1, f32, f32)
// CHECK: scf.for {{.+}} -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, i1, f32, f32)
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[H]], 0, 0] [1, 1, %{{.+}}, 8]
func.func @dynamic_rows(%q: tensor<2x4x?x16xf32>, %k: tensor<2x2x?x16xf32>,
                        %v: tensor<2x2x?x8xf32>, %g: tensor<2x1x?x1xf32>) -> tensor<2x4x?x8xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<2x4x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?x8xf32>, tensor<2x1x?x1xf32>) -> tensor<2x4x?x8xf32>
  return %0 : tensor<2x4x?x8xf32>
}

// -----

// Static rows: the two query heads of each GQA group are stacked into one
// 80-row tile, the head loop steps by the group, and the tail block
// (keys 32..40) is padded to 16 keys: zeros, then its 8 rows.
// CHECK-LABEL: func.func @stacked_group
// CHECK: scf.for %[[H:.+]] = %c0 to %c4 step %c2
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [40, 16] [1, 1] : tensor<40x16xf32> into tensor<80x16xf32>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[40, 0] [40, 16] [1, 1] : tensor<40x16xf32> into tensor<80x16xf32>
// CHECK: scf.for {{.+}} -> (tensor<80xf32>, tensor<80xf32>, tensor<80xf32>, tensor<80x8xf32>, tensor<80x8xf32>, tensor<80x8xf32>, i1, f32, f32)
// CHECK: %[[ZEROS:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<16x16xf32>)
// CHECK: tensor.insert_slice %{{.+}} into %[[ZEROS]][0, 0] [8, 16] [1, 1] : tensor<8x16xf32> into tensor<16x16xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [40, 8] [1, 1] : tensor<80x8xf32> to tensor<40x8xf32>
// CHECK: tensor.extract_slice %{{.+}}[40, 0] [40, 8] [1, 1] : tensor<80x8xf32> to tensor<40x8xf32>
func.func @stacked_group(%q: tensor<1x4x40x16xf32>, %k: tensor<1x2x40x16xf32>,
                         %v: tensor<1x2x40x8xf32>, %g: tensor<1x4x40x8xf32>) -> tensor<1x4x40x8xf32> {
  %0 = gated_attention.attention %q, %k, %v, %g
      : (tensor<1x4x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x8xf32>, tensor<1x4x40x8xf32>) -> tensor<1x4x40x8xf32>
  return %0 : tensor<1x4x40x8xf32>
}

// -----

// The key block update. The running maximum moves only by more than
// 8 ln 2 (so a slowly rising score cannot round away a rescaling per
// block); the block's row sums are added to the rescaled l by compensated
// summation: summed in place onto minus the rescaled compensation, then
// t = alpha l + y, c = (t - alpha l) - y, and the epilogue subtracts c;
// P V is summed onto a plain chunk, added to (acc, accc) the same way once
// per 1024 keys (the error does not grow with the number of blocks); the
// weights are scaled by sigma, from max|v| so far and the keys seen, so
// that acc cannot overflow.
// CHECK-LABEL: func.func @compensated_update
// CHECK-DAG: %[[TAU:.+]] = arith.constant 5.54517746 : f32
// CHECK: %[[LOOP:.+]]:9 = scf.for %[[KB:.+]] = %{{.+}} iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}, %[[LC:.+]] = %{{.+}}, %[[ACC:.+]] = %{{.+}}, %[[ACCC:.+]] = %{{.+}}, %[[CHUNK:.+]] = %{{.+}}, %[[FOLDED:.+]] = %false, %[[VMAX:.+]] = %{{.+}}, %[[SIGMA:.+]] = %{{.+}}) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, i1, f32, f32)
// CHECK: %[[V:.+]] = tensor.extract_slice %{{.+}}[0, 0, %[[KB]], 0] [1, 1, 16, 8]
// max|v| of the block: the columns' maxima over the keys on |v|'s bits (an
// unsigned max, no horizontal reduction per key), then one over Dv.
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%{{.+}} : tensor<16x8xf32>) outs(%{{.+}} : tensor<8xi32>)
// CHECK: arith.bitcast %{{.+}} : f32 to i32
// CHECK: arith.andi %{{.+}}, %{{.+}} : i32
// CHECK: arith.maxui
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction"]} ins(%{{.+}} : tensor<8xi32>)
// CHECK: arith.maxui
// CHECK: %[[BLOCKMAX:.+]] = arith.bitcast %{{.+}} : i32 to f32
// CHECK: %[[NEWVMAX:.+]] = arith.maximumf %[[VMAX]], %[[BLOCKMAX]] : f32
// CHECK: %[[NEWSIGMA:.+]] = arith.bitcast %{{.+}} : i32 to f32
// sigma' = 2^k enters the weights' exp as k: its exponent field k + 127
// replaces 2^n's bias, and n < 0.5 - (k + 127) gives 0 (subnormal).
// CHECK: %[[FIELD:.+]] = arith.andi %{{.+}}, %c255_i32 : i32
// CHECK: %[[FIELDF:.+]] = arith.uitofp %[[FIELD]] : i32 to f32
// CHECK: %[[LIMIT:.+]] = arith.subf %{{.+}}, %[[FIELDF]] : f32
// CHECK: %[[STEP:.+]] = arith.divf %[[NEWSIGMA]], %[[SIGMA]] : f32
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[M]], %{{.+}} : tensor<16xf32>, tensor<16xf32>)
// CHECK: %[[LIM:.+]] = arith.addf %{{.+}}, %[[TAU]] : f32
// CHECK: arith.cmpf ogt, %{{.+}}, %[[LIM]] : f32
// exp (buildWeightExp): 2^n p(r) with n = x log2 e rounded by adding
// 1.5 * 2^23 (t), 2^n from t's low bits, 0 where n <= -127, without
// math.exp's clamps or a float-to-int conversion.
// CHECK-NOT: math.exp
// CHECK: %[[X:.+]] = arith.subf
// CHECK-NEXT: %[[T:.+]] = math.fma %[[X]], %{{.+}}, %[[ROUND:.+]] : f32
// CHECK-NEXT: %[[N:.+]] = arith.subf %[[T]], %[[ROUND]] : f32
// CHECK-NOT: arith.select
// CHECK-NOT: math.floor
// CHECK: %[[BITS:.+]] = arith.bitcast %[[T]] : f32 to i32
// CHECK-NEXT: %[[BIASED:.+]] = arith.addi %[[BITS]], %[[FIELD]] : i32
// CHECK-NEXT: %[[EXP:.+]] = arith.shli %[[BIASED]], %c23_i32 : i32
// CHECK-NEXT: %[[TWON:.+]] = arith.bitcast %[[EXP]] : i32 to f32
// CHECK-NEXT: %[[Y:.+]] = arith.mulf %{{.+}}, %[[TWON]] : f32
// CHECK-NEXT: %[[UNDER:.+]] = arith.cmpf olt, %[[N]], %[[LIMIT]] : f32
// CHECK-NEXT: %[[E:.+]] = arith.select %[[UNDER]], %{{.+}}, %[[Y]] : f32
// CHECK-NEXT: linalg.yield %[[E]] : f32
// CHECK: %[[ALPHA:.+]] = linalg.generic
// CHECK-NOT: math.exp
// CHECK: arith.shli
// CHECK: %[[A:.+]] = arith.select
// CHECK-NEXT: arith.mulf %[[A]], %[[STEP]] : f32
// CHECK: %[[NEWM:.+]] = linalg.generic {{.+}} outs(%[[M]] : tensor<16xf32>)
// CHECK: arith.cmpf ogt
// CHECK: %[[LY0:.+]] = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<16xf32>) outs(%[[LC]] : tensor<16xf32>)
// CHECK: arith.negf
// CHECK: %[[LY:.+]] = linalg.generic {{.+}} ins(%[[P]] : tensor<16x16xf32>) outs(%[[LY0]] : tensor<16xf32>)
// CHECK: %[[LNEW:.+]]:2 = linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<16xf32>) outs(%[[L]], %[[LY]] : tensor<16xf32>, tensor<16xf32>)
// CHECK: %[[RESCALED:.+]]:3 = scf.if
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<16xf32>) outs(%[[CHUNK]], %[[ACC]], %[[ACCC]] :
// CHECK: %[[PV:.+]] = linalg.generic {{.+}} ins(%[[P]], %[[V]] : tensor<16x16xf32>, tensor<16x8xf32>) outs(%[[RESCALED]]#0 : tensor<16x8xf32>)
// The fold: y = chunk - c, then the compensated add of y to acc (the first
// fold takes the chunk as it is).
// CHECK: %[[FOLD:.+]]:3 = scf.if
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[PV]] : tensor<16x8xf32>) outs(%[[RESCALED]]#1, %[[RESCALED]]#2 : tensor<16x8xf32>, tensor<16x8xf32>)
// CHECK-NEXT: ^bb0(%[[CH:.+]]: f32, %[[S:.+]]: f32, %[[C:.+]]: f32):
// CHECK-NEXT: %[[Y:.+]] = arith.subf %[[CH]], %[[C]] : f32
// CHECK-NEXT: %[[T:.+]] = arith.addf %[[S]], %[[Y]] : f32
// CHECK-NEXT: %[[G:.+]] = arith.subf %[[T]], %[[S]] : f32
// CHECK-NEXT: %[[CN:.+]] = arith.subf %[[G]], %[[Y]] : f32
// An infinite sum keeps a compensation of 0 (not inf - inf = NaN).
// CHECK-NEXT: %[[ABS:.+]] = math.absf %[[T]] : f32
// CHECK-NEXT: %[[INF:.+]] = arith.cmpf oeq, %[[ABS]], %{{.+}} : f32
// CHECK-NEXT: %[[CS:.+]] = arith.select %[[INF]], %{{.+}}, %[[CN]] : f32
// CHECK-NEXT: %[[TS:.+]] = arith.select %[[FOLDED]], %[[T]], %[[CH]] : f32
// CHECK-NEXT: %[[CSS:.+]] = arith.select %[[FOLDED]], %[[CS]], %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[TS]], %[[CSS]] : f32, f32
// CHECK: scf.yield %[[NEWM]], %[[LNEW]]#0, %[[LNEW]]#1, %[[FOLD]]#1, %[[FOLD]]#2, %[[FOLD]]#0, %{{.+}}, %[[NEWVMAX]], %[[NEWSIGMA]]
// The epilogue: (acc - accc + chunk) / (l - lc).
// CHECK: %[[TOTAL:.+]] = scf.if %[[LOOP]]#6
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[LOOP]]#3, %[[LOOP]]#4 : tensor<16x8xf32>, tensor<16x8xf32>) outs(%[[LOOP]]#5 : tensor<16x8xf32>)
// CHECK: arith.subf
// CHECK: arith.divf
// CHECK: linalg.generic {{.+}} ins(%[[TOTAL]], %{{.+}} : tensor<16x8xf32>, tensor<16xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
func.func @compensated_update(%q: tensor<1x1x16x16xf32>, %k: tensor<1x1x32x16xf32>,
                              %v: tensor<1x1x32x8xf32>) -> tensor<1x1x16x8xf32> {
  %0 = gated_attention.attention %q, %k, %v
      : (tensor<1x1x16x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x8xf32>) -> tensor<1x1x16x8xf32>
  return %0 : tensor<1x1x16x8xf32>
}

// -----

// f16 values cannot reach the f32 range in any sum of at most 2^48 keys:
// no max|v| is tracked and the weights are not scaled.
// A bf16 or f16 result sums P V plainly into a chunk, which the block that
// reaches a multiple of 1024 keys adds to the compensated (acc, accc), the
// first time by replacing them (they start undefined). The three are
// rescaled only when some row that saw a key (m not -inf) has alpha != 1;
// after the loop acc - accc + chunk, where a chunk was folded, is the sum
// the epilogue reads alone.
// CHECK-LABEL: func.func @f16_no_overflow_scale
// CHECK: %[[ACC0:.+]] = bufferization.alloc_tensor() : tensor<16x8xf32>
// CHECK-NEXT: %[[ACCC0:.+]] = bufferization.alloc_tensor() : tensor<16x8xf32>
// CHECK-NEXT: %[[CH:.+]] = bufferization.alloc_tensor() : tensor<16x8xf32>
// CHECK-NEXT: %[[CH0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[CH]] : tensor<16x8xf32>)
// CHECK-NEXT: %[[LOOP:.+]]:7 = scf.for %[[KB:[^ ]+]] = {{.+}} iter_args(%[[M:[^ ]+]] = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[ACC:[^ ]+]] = %[[ACC0]], %[[ACCC:[^ ]+]] = %[[ACCC0]], %[[CHUNK:[^ ]+]] = %[[CH0]], %[[FOLDED:[^ ]+]] = %false) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, i1) {
// CHECK-NOT: arith.maxui
// CHECK: %[[MOVED:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]} ins(%[[ALPHA:[^ ]+]], %[[M]] : tensor<16xf32>, tensor<16xf32>) outs(%{{.+}} : tensor<i1>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[NOT1:.+]] = arith.cmpf une
// CHECK-NEXT: %[[SEEN:.+]] = arith.cmpf one
// CHECK-NEXT: %[[BOTH:.+]] = arith.andi %[[NOT1]], %[[SEEN]]
// CHECK-NEXT: arith.ori %{{.+}}, %[[BOTH]]
// CHECK: %[[ANY:.+]] = tensor.extract %[[MOVED]][]
// CHECK: %[[RESCALED:.+]]:3 = scf.if %[[ANY]]
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[ALPHA]] : tensor<16xf32>) outs(%[[CHUNK]], %[[ACC]], %[[ACCC]] :
// CHECK-COUNT-3: arith.mulf
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[CHUNK]], %[[ACC]], %[[ACCC]]
// CHECK: %[[PV:.+]] = linalg.generic {{.+}} outs(%[[RESCALED]]#0 : tensor<16x8xf32>)
// CHECK: %[[C0:.+]] = arith.divui %[[KB]], %c1024
// CHECK: %[[END:.+]] = arith.addi %[[KB]], %c16
// CHECK: %[[C1:.+]] = arith.divui %[[END]], %c1024
// CHECK: %[[ENDS:.+]] = arith.cmpi ugt, %[[C1]], %[[C0]]
// CHECK: %[[NOWFOLDED:.+]] = arith.select %[[ENDS]], %true, %[[FOLDED]]
// CHECK: %[[FOLD:.+]]:3 = scf.if %[[ENDS]]
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[PV]] : tensor<16x8xf32>) outs(%[[RESCALED]]#1, %[[RESCALED]]#2 :
// CHECK: arith.select %[[FOLDED]]
// CHECK-NEXT: arith.select %[[FOLDED]]
// CHECK: %[[ZEROED:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[PV]] : tensor<16x8xf32>)
// CHECK-NEXT: scf.yield %[[ZEROED]]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[PV]], %[[RESCALED]]#1, %[[RESCALED]]#2
// CHECK: scf.yield %{{.+}}, %{{.+}}, %{{.+}}, %[[FOLD]]#1, %[[FOLD]]#2, %[[FOLD]]#0, %[[NOWFOLDED]]
// CHECK: %[[TOTAL:.+]] = scf.if %[[LOOP]]#6
// CHECK-NEXT: linalg.generic {{.+}} ins(%[[LOOP]]#3, %[[LOOP]]#4 : tensor<16x8xf32>, tensor<16x8xf32>) outs(%[[LOOP]]#5 : tensor<16x8xf32>)
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[LOOP]]#5
// CHECK: linalg.generic {{.+}} ins(%[[TOTAL]], %{{.+}} : tensor<16x8xf32>, tensor<16xf32>)
// CHECK-NOT: arith.subf
// CHECK: arith.truncf
// CHECK: return
func.func @f16_no_overflow_scale(%q: tensor<1x1x16x16xf16>, %k: tensor<1x1x32x16xf16>,
                                 %v: tensor<1x1x32x8xf16>) -> tensor<1x1x16x8xf16> {
  %0 = gated_attention.attention %q, %k, %v
      : (tensor<1x1x16x16xf16>, tensor<1x1x32x16xf16>, tensor<1x1x32x8xf16>) -> tensor<1x1x16x8xf16>
  return %0 : tensor<1x1x16x8xf16>
}

// -----

// bf16 values: max|v| on their own 16 bits, twice the lanes of the f32
// bits and no extension; they are the high half of the f32's.
// CHECK-LABEL: func.func @bf16_value_bits
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%{{.+}} : tensor<16x8xbf16>) outs(%{{.+}} : tensor<8xi16>)
// CHECK: arith.bitcast %{{.+}} : bf16 to i16
// CHECK: arith.andi %{{.+}}, %{{.+}} : i16
// CHECK: arith.maxui
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction"]} ins(%{{.+}} : tensor<8xi16>)
// CHECK: %[[HALF:.+]] = arith.extui %{{.+}} : i16 to i32
// CHECK-NEXT: %[[BITS:.+]] = arith.shli %[[HALF]], %{{.+}} : i32
// CHECK-NEXT: arith.bitcast %[[BITS]] : i32 to f32
func.func @bf16_value_bits(%q: tensor<1x1x16x16xbf16>, %k: tensor<1x1x32x16xbf16>,
                           %v: tensor<1x1x32x8xbf16>) -> tensor<1x1x16x8xbf16> {
  %0 = gated_attention.attention %q, %k, %v
      : (tensor<1x1x16x16xbf16>, tensor<1x1x32x16xbf16>, tensor<1x1x32x8xbf16>) -> tensor<1x1x16x8xbf16>
  return %0 : tensor<1x1x16x8xbf16>
}
