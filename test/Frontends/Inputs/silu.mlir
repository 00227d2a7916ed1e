#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1) -> ()>
#map6 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map8 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
  func.func @forward(%arg0: tensor<1x4x16x32xf32>, %arg1: tensor<1x4x16x32xf32>, %arg2: tensor<1x4x16x32xf32>, %arg3: tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32> {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %true = arith.constant true
    %cst_1 = arith.constant 1.000000e+00 : f32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<1x4x16x16xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_4 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_5 = arith.constant dense<true> : tensor<16x16xi1>
    %cst_6 = arith.constant 0xFFF0000000000000 : f64
    %cst_7 = arith.constant 0.42044820762685725 : f64
    %0 = tensor.empty() : tensor<1x4x16x32xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<1x4x16x32xf32>) outs(%0 : tensor<1x4x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %41 = arith.truncf %cst_7 : f64 to f32
      %42 = arith.mulf %in, %41 : f32
      linalg.yield %42 : f32
    } -> tensor<1x4x16x32xf32>
    %2 = tensor.empty() : tensor<16xi64>
    %3 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel"]} outs(%2 : tensor<16xi64>) {
    ^bb0(%out: i64):
      %41 = linalg.index 0 : index
      %42 = arith.index_cast %41 : index to i64
      linalg.yield %42 : i64
    } -> tensor<16xi64>
    %expanded = tensor.expand_shape %3 [[0, 1]] output_shape [1, 16] : tensor<16xi64> into tensor<1x16xi64>
    %expanded_8 = tensor.expand_shape %3 [[0, 1]] output_shape [16, 1] : tensor<16xi64> into tensor<16x1xi64>
    %4 = tensor.empty() : tensor<16x16xi64>
    %5 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel"]} ins(%expanded, %expanded_8 : tensor<1x16xi64>, tensor<16x1xi64>) outs(%4 : tensor<16x16xi64>) {
    ^bb0(%in: i64, %in_15: i64, %out: i64):
      %41 = arith.subi %in, %in_15 : i64
      linalg.yield %41 : i64
    } -> tensor<16x16xi64>
    %6 = tensor.empty() : tensor<16x16xi1>
    %7 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<16x16xi64>) outs(%6 : tensor<16x16xi1>) {
    ^bb0(%in: i64, %out: i1):
      %41 = arith.cmpi sle, %in, %c0_i64 : i64
      linalg.yield %41 : i1
    } -> tensor<16x16xi1>
    %8 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%7, %cst_5 : tensor<16x16xi1>, tensor<16x16xi1>) outs(%6 : tensor<16x16xi1>) {
    ^bb0(%in: i1, %in_15: i1, %out: i1):
      %41 = arith.andi %in, %in_15 : i1
      linalg.yield %41 : i1
    } -> tensor<16x16xi1>
    %9 = tensor.empty() : tensor<16x16xf32>
    %10 = linalg.generic {indexing_maps = [#map4, #map5, #map5, #map4], iterator_types = ["parallel", "parallel"]} ins(%8, %cst_3, %cst_4 : tensor<16x16xi1>, tensor<f32>, tensor<f32>) outs(%9 : tensor<16x16xf32>) {
    ^bb0(%in: i1, %in_15: f32, %in_16: f32, %out: f32):
      %41 = arith.select %in, %in_15, %in_16 : f32
      linalg.yield %41 : f32
    } -> tensor<16x16xf32>
    %11 = tensor.empty() : tensor<1x4x32x16xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<1x4x16x32xf32>) outs(%11 : tensor<1x4x32x16xf32>) permutation = [0, 1, 3, 2] 
    %12 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed : tensor<1x4x32x16xf32>) outs(%11 : tensor<1x4x32x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %41 = arith.truncf %cst_7 : f64 to f32
      %42 = arith.mulf %in, %41 : f32
      linalg.yield %42 : f32
    } -> tensor<1x4x32x16xf32>
    %collapsed = tensor.collapse_shape %1 [[0, 1], [2], [3]] : tensor<1x4x16x32xf32> into tensor<4x16x32xf32>
    %collapsed_9 = tensor.collapse_shape %12 [[0, 1], [2], [3]] : tensor<1x4x32x16xf32> into tensor<4x32x16xf32>
    %13 = tensor.empty() : tensor<4x16x16xf32>
    %14 = linalg.fill ins(%cst : f32) outs(%13 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %15 = linalg.batch_matmul ins(%collapsed, %collapsed_9 : tensor<4x16x32xf32>, tensor<4x32x16xf32>) outs(%14 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %expanded_10 = tensor.expand_shape %15 [[0, 1], [2], [3]] output_shape [1, 4, 16, 16] : tensor<4x16x16xf32> into tensor<1x4x16x16xf32>
    %16 = tensor.empty() : tensor<1x4x16x16xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map6, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_10, %10 : tensor<1x4x16x16xf32>, tensor<16x16xf32>) outs(%16 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %41 = arith.addf %in, %in_15 : f32
      linalg.yield %41 : f32
    } -> tensor<1x4x16x16xf32>
    %18 = tensor.empty() : tensor<1x4x16xi64>
    %19 = linalg.fill ins(%c0_i64 : i64) outs(%18 : tensor<1x4x16xi64>) -> tensor<1x4x16xi64>
    %20 = tensor.empty() : tensor<1x4x16xf32>
    %21 = linalg.fill ins(%cst_0 : f32) outs(%20 : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
    %22:2 = linalg.generic {indexing_maps = [#map, #map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%17 : tensor<1x4x16x16xf32>) outs(%21, %19 : tensor<1x4x16xf32>, tensor<1x4x16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_15: i64):
      %41 = linalg.index 3 : index
      %42 = arith.index_cast %41 : index to i64
      %43 = arith.maximumf %in, %out : f32
      %44 = arith.cmpf ogt, %in, %out : f32
      %45 = arith.select %44, %42, %out_15 : i64
      linalg.yield %43, %45 : f32, i64
    } -> (tensor<1x4x16xf32>, tensor<1x4x16xi64>)
    %expanded_11 = tensor.expand_shape %22#0 [[0], [1], [2, 3]] output_shape [1, 4, 16, 1] : tensor<1x4x16xf32> into tensor<1x4x16x1xf32>
    %23 = linalg.generic {indexing_maps = [#map, #map8, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%17, %expanded_11 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%16 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %41 = arith.subf %in, %in_15 : f32
      linalg.yield %41 : f32
    } -> tensor<1x4x16x16xf32>
    %24 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%23 : tensor<1x4x16x16xf32>) outs(%16 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %41 = math.exp %in : f32
      linalg.yield %41 : f32
    } -> tensor<1x4x16x16xf32>
    %25 = tensor.empty() : tensor<1x4x16x1xf32>
    %26 = linalg.fill ins(%cst : f32) outs(%25 : tensor<1x4x16x1xf32>) -> tensor<1x4x16x1xf32>
    %27 = linalg.generic {indexing_maps = [#map, #map8], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%24 : tensor<1x4x16x16xf32>) outs(%26 : tensor<1x4x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %41 = arith.addf %in, %out : f32
      linalg.yield %41 : f32
    } -> tensor<1x4x16x1xf32>
    %28 = linalg.generic {indexing_maps = [#map, #map8, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%24, %27 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%16 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %41 = arith.divf %in, %in_15 : f32
      linalg.yield %41 : f32
    } -> tensor<1x4x16x16xf32>
    %29 = tensor.empty() : tensor<1x4x16x16xi1>
    %30 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%17 : tensor<1x4x16x16xf32>) outs(%29 : tensor<1x4x16x16xi1>) {
    ^bb0(%in: f32, %out: i1):
      %41 = arith.extf %in : f32 to f64
      %42 = arith.cmpf oeq, %41, %cst_6 : f64
      linalg.yield %42 : i1
    } -> tensor<1x4x16x16xi1>
    %31 = tensor.empty() : tensor<1x4x16x1xi1>
    %32 = linalg.fill ins(%true : i1) outs(%31 : tensor<1x4x16x1xi1>) -> tensor<1x4x16x1xi1>
    %33 = linalg.generic {indexing_maps = [#map, #map8], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%30 : tensor<1x4x16x16xi1>) outs(%32 : tensor<1x4x16x1xi1>) {
    ^bb0(%in: i1, %out: i1):
      %41 = arith.andi %in, %out : i1
      linalg.yield %41 : i1
    } -> tensor<1x4x16x1xi1>
    %34 = linalg.generic {indexing_maps = [#map8, #map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%33, %cst_2, %28 : tensor<1x4x16x1xi1>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) outs(%16 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: i1, %in_15: f32, %in_16: f32, %out: f32):
      %41 = arith.select %in, %in_15, %in_16 : f32
      linalg.yield %41 : f32
    } -> tensor<1x4x16x16xf32>
    %collapsed_12 = tensor.collapse_shape %34 [[0, 1], [2], [3]] : tensor<1x4x16x16xf32> into tensor<4x16x16xf32>
    %collapsed_13 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<1x4x16x32xf32> into tensor<4x16x32xf32>
    %35 = tensor.empty() : tensor<4x16x32xf32>
    %36 = linalg.fill ins(%cst : f32) outs(%35 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %37 = linalg.batch_matmul ins(%collapsed_12, %collapsed_13 : tensor<4x16x16xf32>, tensor<4x16x32xf32>) outs(%36 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %expanded_14 = tensor.expand_shape %37 [[0, 1], [2], [3]] output_shape [1, 4, 16, 32] : tensor<4x16x32xf32> into tensor<1x4x16x32xf32>
    %38 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg3 : tensor<1x4x16x32xf32>) outs(%0 : tensor<1x4x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %41 = arith.negf %in : f32
      %42 = math.exp %41 : f32
      %43 = arith.addf %42, %cst_1 : f32
      %44 = arith.divf %cst_1, %43 : f32
      linalg.yield %44 : f32
    } -> tensor<1x4x16x32xf32>
    %39 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg3, %38 : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>) outs(%0 : tensor<1x4x16x32xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %41 = arith.mulf %in, %in_15 : f32
      linalg.yield %41 : f32
    } -> tensor<1x4x16x32xf32>
    %40 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_14, %39 : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>) outs(%0 : tensor<1x4x16x32xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %41 = arith.mulf %in, %in_15 : f32
      linalg.yield %41 : f32
    } -> tensor<1x4x16x32xf32>
    return %40 : tensor<1x4x16x32xf32>
  }
}
