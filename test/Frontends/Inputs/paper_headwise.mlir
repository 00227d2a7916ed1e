#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1) -> ()>
#map6 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#map7 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map8 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map9 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map10 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
  func.func @forward(%arg0: tensor<1x4x16x32xf32>, %arg1: tensor<1x2x16x32xf32>, %arg2: tensor<1x2x16x32xf32>, %arg3: tensor<1x16x4x1xf32>) -> tensor<1x16x128xf32> {
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
      %45 = arith.truncf %cst_7 : f64 to f32
      %46 = arith.mulf %in, %45 : f32
      linalg.yield %46 : f32
    } -> tensor<1x4x16x32xf32>
    %2 = tensor.empty() : tensor<16xi64>
    %3 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel"]} outs(%2 : tensor<16xi64>) {
    ^bb0(%out: i64):
      %45 = linalg.index 0 : index
      %46 = arith.index_cast %45 : index to i64
      linalg.yield %46 : i64
    } -> tensor<16xi64>
    %expanded = tensor.expand_shape %3 [[0, 1]] output_shape [1, 16] : tensor<16xi64> into tensor<1x16xi64>
    %expanded_8 = tensor.expand_shape %3 [[0, 1]] output_shape [16, 1] : tensor<16xi64> into tensor<16x1xi64>
    %4 = tensor.empty() : tensor<16x16xi64>
    %5 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel"]} ins(%expanded, %expanded_8 : tensor<1x16xi64>, tensor<16x1xi64>) outs(%4 : tensor<16x16xi64>) {
    ^bb0(%in: i64, %in_18: i64, %out: i64):
      %45 = arith.subi %in, %in_18 : i64
      linalg.yield %45 : i64
    } -> tensor<16x16xi64>
    %6 = tensor.empty() : tensor<16x16xi1>
    %7 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<16x16xi64>) outs(%6 : tensor<16x16xi1>) {
    ^bb0(%in: i64, %out: i1):
      %45 = arith.cmpi sle, %in, %c0_i64 : i64
      linalg.yield %45 : i1
    } -> tensor<16x16xi1>
    %8 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%7, %cst_5 : tensor<16x16xi1>, tensor<16x16xi1>) outs(%6 : tensor<16x16xi1>) {
    ^bb0(%in: i1, %in_18: i1, %out: i1):
      %45 = arith.andi %in, %in_18 : i1
      linalg.yield %45 : i1
    } -> tensor<16x16xi1>
    %9 = tensor.empty() : tensor<16x16xf32>
    %10 = linalg.generic {indexing_maps = [#map4, #map5, #map5, #map4], iterator_types = ["parallel", "parallel"]} ins(%8, %cst_3, %cst_4 : tensor<16x16xi1>, tensor<f32>, tensor<f32>) outs(%9 : tensor<16x16xf32>) {
    ^bb0(%in: i1, %in_18: f32, %in_19: f32, %out: f32):
      %45 = arith.select %in, %in_18, %in_19 : f32
      linalg.yield %45 : f32
    } -> tensor<16x16xf32>
    %11 = tensor.empty() : tensor<1x2x2x16x32xf32>
    %12 = linalg.generic {indexing_maps = [#map6, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : tensor<1x2x16x32xf32>) outs(%11 : tensor<1x2x2x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x2x2x16x32xf32>
    %collapsed = tensor.collapse_shape %12 [[0], [1, 2], [3], [4]] : tensor<1x2x2x16x32xf32> into tensor<1x4x16x32xf32>
    %13 = linalg.generic {indexing_maps = [#map6, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg2 : tensor<1x2x16x32xf32>) outs(%11 : tensor<1x2x2x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x2x2x16x32xf32>
    %14 = tensor.empty() : tensor<1x4x32x16xf32>
    %transposed = linalg.transpose ins(%collapsed : tensor<1x4x16x32xf32>) outs(%14 : tensor<1x4x32x16xf32>) permutation = [0, 1, 3, 2] 
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed : tensor<1x4x32x16xf32>) outs(%14 : tensor<1x4x32x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %45 = arith.truncf %cst_7 : f64 to f32
      %46 = arith.mulf %in, %45 : f32
      linalg.yield %46 : f32
    } -> tensor<1x4x32x16xf32>
    %collapsed_9 = tensor.collapse_shape %1 [[0, 1], [2], [3]] : tensor<1x4x16x32xf32> into tensor<4x16x32xf32>
    %collapsed_10 = tensor.collapse_shape %15 [[0, 1], [2], [3]] : tensor<1x4x32x16xf32> into tensor<4x32x16xf32>
    %16 = tensor.empty() : tensor<4x16x16xf32>
    %17 = linalg.fill ins(%cst : f32) outs(%16 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %18 = linalg.batch_matmul ins(%collapsed_9, %collapsed_10 : tensor<4x16x32xf32>, tensor<4x32x16xf32>) outs(%17 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %expanded_11 = tensor.expand_shape %18 [[0, 1], [2], [3]] output_shape [1, 4, 16, 16] : tensor<4x16x16xf32> into tensor<1x4x16x16xf32>
    %19 = tensor.empty() : tensor<1x4x16x16xf32>
    %20 = linalg.generic {indexing_maps = [#map, #map8, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_11, %10 : tensor<1x4x16x16xf32>, tensor<16x16xf32>) outs(%19 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_18: f32, %out: f32):
      %45 = arith.addf %in, %in_18 : f32
      linalg.yield %45 : f32
    } -> tensor<1x4x16x16xf32>
    %21 = tensor.empty() : tensor<1x4x16xi64>
    %22 = linalg.fill ins(%c0_i64 : i64) outs(%21 : tensor<1x4x16xi64>) -> tensor<1x4x16xi64>
    %23 = tensor.empty() : tensor<1x4x16xf32>
    %24 = linalg.fill ins(%cst_0 : f32) outs(%23 : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
    %25:2 = linalg.generic {indexing_maps = [#map, #map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%20 : tensor<1x4x16x16xf32>) outs(%24, %22 : tensor<1x4x16xf32>, tensor<1x4x16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_18: i64):
      %45 = linalg.index 3 : index
      %46 = arith.index_cast %45 : index to i64
      %47 = arith.maximumf %in, %out : f32
      %48 = arith.cmpf ogt, %in, %out : f32
      %49 = arith.select %48, %46, %out_18 : i64
      linalg.yield %47, %49 : f32, i64
    } -> (tensor<1x4x16xf32>, tensor<1x4x16xi64>)
    %expanded_12 = tensor.expand_shape %25#0 [[0], [1], [2, 3]] output_shape [1, 4, 16, 1] : tensor<1x4x16xf32> into tensor<1x4x16x1xf32>
    %26 = linalg.generic {indexing_maps = [#map, #map10, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%20, %expanded_12 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%19 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_18: f32, %out: f32):
      %45 = arith.subf %in, %in_18 : f32
      linalg.yield %45 : f32
    } -> tensor<1x4x16x16xf32>
    %27 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%26 : tensor<1x4x16x16xf32>) outs(%19 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %45 = math.exp %in : f32
      linalg.yield %45 : f32
    } -> tensor<1x4x16x16xf32>
    %28 = tensor.empty() : tensor<1x4x16x1xf32>
    %29 = linalg.fill ins(%cst : f32) outs(%28 : tensor<1x4x16x1xf32>) -> tensor<1x4x16x1xf32>
    %30 = linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%27 : tensor<1x4x16x16xf32>) outs(%29 : tensor<1x4x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %45 = arith.addf %in, %out : f32
      linalg.yield %45 : f32
    } -> tensor<1x4x16x1xf32>
    %31 = linalg.generic {indexing_maps = [#map, #map10, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%27, %30 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%19 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_18: f32, %out: f32):
      %45 = arith.divf %in, %in_18 : f32
      linalg.yield %45 : f32
    } -> tensor<1x4x16x16xf32>
    %32 = tensor.empty() : tensor<1x4x16x16xi1>
    %33 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%20 : tensor<1x4x16x16xf32>) outs(%32 : tensor<1x4x16x16xi1>) {
    ^bb0(%in: f32, %out: i1):
      %45 = arith.extf %in : f32 to f64
      %46 = arith.cmpf oeq, %45, %cst_6 : f64
      linalg.yield %46 : i1
    } -> tensor<1x4x16x16xi1>
    %34 = tensor.empty() : tensor<1x4x16x1xi1>
    %35 = linalg.fill ins(%true : i1) outs(%34 : tensor<1x4x16x1xi1>) -> tensor<1x4x16x1xi1>
    %36 = linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%33 : tensor<1x4x16x16xi1>) outs(%35 : tensor<1x4x16x1xi1>) {
    ^bb0(%in: i1, %out: i1):
      %45 = arith.andi %in, %out : i1
      linalg.yield %45 : i1
    } -> tensor<1x4x16x1xi1>
    %37 = linalg.generic {indexing_maps = [#map10, #map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%36, %cst_2, %31 : tensor<1x4x16x1xi1>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) outs(%19 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: i1, %in_18: f32, %in_19: f32, %out: f32):
      %45 = arith.select %in, %in_18, %in_19 : f32
      linalg.yield %45 : f32
    } -> tensor<1x4x16x16xf32>
    %collapsed_13 = tensor.collapse_shape %37 [[0, 1], [2], [3]] : tensor<1x4x16x16xf32> into tensor<4x16x16xf32>
    %collapsed_14 = tensor.collapse_shape %13 [[0, 1, 2], [3], [4]] : tensor<1x2x2x16x32xf32> into tensor<4x16x32xf32>
    %38 = tensor.empty() : tensor<4x16x32xf32>
    %39 = linalg.fill ins(%cst : f32) outs(%38 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %40 = linalg.batch_matmul ins(%collapsed_13, %collapsed_14 : tensor<4x16x16xf32>, tensor<4x16x32xf32>) outs(%39 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %expanded_15 = tensor.expand_shape %40 [[0, 1], [2], [3]] output_shape [1, 4, 16, 32] : tensor<4x16x32xf32> into tensor<1x4x16x32xf32>
    %41 = tensor.empty() : tensor<1x16x4x32xf32>
    %transposed_16 = linalg.transpose ins(%expanded_15 : tensor<1x4x16x32xf32>) outs(%41 : tensor<1x16x4x32xf32>) permutation = [0, 2, 1, 3] 
    %42 = tensor.empty() : tensor<1x16x4x1xf32>
    %43 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg3 : tensor<1x16x4x1xf32>) outs(%42 : tensor<1x16x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %45 = arith.negf %in : f32
      %46 = math.exp %45 : f32
      %47 = arith.addf %46, %cst_1 : f32
      %48 = arith.divf %cst_1, %47 : f32
      linalg.yield %48 : f32
    } -> tensor<1x16x4x1xf32>
    %44 = linalg.generic {indexing_maps = [#map, #map10, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed_16, %43 : tensor<1x16x4x32xf32>, tensor<1x16x4x1xf32>) outs(%41 : tensor<1x16x4x32xf32>) {
    ^bb0(%in: f32, %in_18: f32, %out: f32):
      %45 = arith.mulf %in, %in_18 : f32
      linalg.yield %45 : f32
    } -> tensor<1x16x4x32xf32>
    %collapsed_17 = tensor.collapse_shape %44 [[0], [1], [2, 3]] : tensor<1x16x4x32xf32> into tensor<1x16x128xf32>
    return %collapsed_17 : tensor<1x16x128xf32>
  }
}
