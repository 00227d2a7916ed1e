#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1) -> ()>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#map7 = affine_map<(d0, d1, d2, d3) -> ()>
#map8 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map9 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
  func.func @forward(%arg0: tensor<1x4x16x32xf32>, %arg1: tensor<1x4x16x32xf32>, %arg2: tensor<1x4x16x32xf32>, %arg3: tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32> {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 1.000000e+00 : f32
    %cst_2 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_4 = arith.constant dense<1.000000e+00> : tensor<16x16xf32>
    %cst_5 = arith.constant 0.17677669529663687 : f64
    %0 = tensor.empty() : tensor<1x4x32x16xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<1x4x16x32xf32>) outs(%0 : tensor<1x4x32x16xf32>) permutation = [0, 1, 3, 2] 
    %collapsed = tensor.collapse_shape %arg0 [[0, 1], [2], [3]] : tensor<1x4x16x32xf32> into tensor<4x16x32xf32>
    %collapsed_6 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<1x4x32x16xf32> into tensor<4x32x16xf32>
    %1 = tensor.empty() : tensor<4x16x16xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %3 = linalg.batch_matmul ins(%collapsed, %collapsed_6 : tensor<4x16x32xf32>, tensor<4x32x16xf32>) outs(%2 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %expanded = tensor.expand_shape %3 [[0, 1], [2], [3]] output_shape [1, 4, 16, 16] : tensor<4x16x16xf32> into tensor<1x4x16x16xf32>
    %4 = tensor.empty() : tensor<1x4x16x16xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded : tensor<1x4x16x16xf32>) outs(%4 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.truncf %cst_5 : f64 to f32
      %35 = arith.mulf %in, %34 : f32
      linalg.yield %35 : f32
    } -> tensor<1x4x16x16xf32>
    %6 = tensor.empty() : tensor<16xi64>
    %7 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel"]} outs(%6 : tensor<16xi64>) {
    ^bb0(%out: i64):
      %34 = linalg.index 0 : index
      %35 = arith.index_cast %34 : index to i64
      linalg.yield %35 : i64
    } -> tensor<16xi64>
    %expanded_7 = tensor.expand_shape %7 [[0, 1]] output_shape [1, 16] : tensor<16xi64> into tensor<1x16xi64>
    %expanded_8 = tensor.expand_shape %7 [[0, 1]] output_shape [16, 1] : tensor<16xi64> into tensor<16x1xi64>
    %8 = tensor.empty() : tensor<16x16xi64>
    %9 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel"]} ins(%expanded_7, %expanded_8 : tensor<1x16xi64>, tensor<16x1xi64>) outs(%8 : tensor<16x16xi64>) {
    ^bb0(%in: i64, %in_14: i64, %out: i64):
      %34 = arith.subi %in, %in_14 : i64
      linalg.yield %34 : i64
    } -> tensor<16x16xi64>
    %10 = tensor.empty() : tensor<16x16xi1>
    %11 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<16x16xi64>) outs(%10 : tensor<16x16xi1>) {
    ^bb0(%in: i64, %out: i1):
      %34 = arith.cmpi sle, %in, %c0_i64 : i64
      linalg.yield %34 : i1
    } -> tensor<16x16xi1>
    %12 = tensor.empty() : tensor<16x16xf32>
    %13 = linalg.generic {indexing_maps = [#map4, #map4, #map5, #map4], iterator_types = ["parallel", "parallel"]} ins(%11, %cst_4, %cst_3 : tensor<16x16xi1>, tensor<16x16xf32>, tensor<f32>) outs(%12 : tensor<16x16xf32>) {
    ^bb0(%in: i1, %in_14: f32, %in_15: f32, %out: f32):
      %34 = arith.select %in, %in_14, %in_15 : f32
      linalg.yield %34 : f32
    } -> tensor<16x16xf32>
    %expanded_9 = tensor.expand_shape %13 [[0, 1, 2], [3]] output_shape [1, 1, 16, 16] : tensor<16x16xf32> into tensor<1x1x16x16xf32>
    %14 = tensor.empty() : tensor<1x1x16x16xi1>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_9 : tensor<1x1x16x16xf32>) outs(%14 : tensor<1x1x16x16xi1>) {
    ^bb0(%in: f32, %out: i1):
      %34 = arith.cmpf oeq, %in, %cst : f32
      linalg.yield %34 : i1
    } -> tensor<1x1x16x16xi1>
    %16 = linalg.generic {indexing_maps = [#map6, #map7, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%15, %cst_2, %5 : tensor<1x1x16x16xi1>, tensor<f32>, tensor<1x4x16x16xf32>) outs(%4 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: i1, %in_14: f32, %in_15: f32, %out: f32):
      %34 = arith.select %in, %in_14, %in_15 : f32
      linalg.yield %34 : f32
    } -> tensor<1x4x16x16xf32>
    %17 = tensor.empty() : tensor<1x4x16xi64>
    %18 = linalg.fill ins(%c0_i64 : i64) outs(%17 : tensor<1x4x16xi64>) -> tensor<1x4x16xi64>
    %19 = tensor.empty() : tensor<1x4x16xf32>
    %20 = linalg.fill ins(%cst_0 : f32) outs(%19 : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
    %21:2 = linalg.generic {indexing_maps = [#map, #map8, #map8], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%16 : tensor<1x4x16x16xf32>) outs(%20, %18 : tensor<1x4x16xf32>, tensor<1x4x16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_14: i64):
      %34 = linalg.index 3 : index
      %35 = arith.index_cast %34 : index to i64
      %36 = arith.maximumf %in, %out : f32
      %37 = arith.cmpf ogt, %in, %out : f32
      %38 = arith.select %37, %35, %out_14 : i64
      linalg.yield %36, %38 : f32, i64
    } -> (tensor<1x4x16xf32>, tensor<1x4x16xi64>)
    %expanded_10 = tensor.expand_shape %21#0 [[0], [1], [2, 3]] output_shape [1, 4, 16, 1] : tensor<1x4x16xf32> into tensor<1x4x16x1xf32>
    %22 = linalg.generic {indexing_maps = [#map, #map9, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%16, %expanded_10 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%4 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %34 = arith.subf %in, %in_14 : f32
      linalg.yield %34 : f32
    } -> tensor<1x4x16x16xf32>
    %23 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%22 : tensor<1x4x16x16xf32>) outs(%4 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = math.exp %in : f32
      linalg.yield %34 : f32
    } -> tensor<1x4x16x16xf32>
    %24 = tensor.empty() : tensor<1x4x16x1xf32>
    %25 = linalg.fill ins(%cst : f32) outs(%24 : tensor<1x4x16x1xf32>) -> tensor<1x4x16x1xf32>
    %26 = linalg.generic {indexing_maps = [#map, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%23 : tensor<1x4x16x16xf32>) outs(%25 : tensor<1x4x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.addf %in, %out : f32
      linalg.yield %34 : f32
    } -> tensor<1x4x16x1xf32>
    %27 = linalg.generic {indexing_maps = [#map, #map9, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%23, %26 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%4 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %34 = arith.divf %in, %in_14 : f32
      linalg.yield %34 : f32
    } -> tensor<1x4x16x16xf32>
    %collapsed_11 = tensor.collapse_shape %27 [[0, 1], [2], [3]] : tensor<1x4x16x16xf32> into tensor<4x16x16xf32>
    %collapsed_12 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<1x4x16x32xf32> into tensor<4x16x32xf32>
    %28 = tensor.empty() : tensor<4x16x32xf32>
    %29 = linalg.fill ins(%cst : f32) outs(%28 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %30 = linalg.batch_matmul ins(%collapsed_11, %collapsed_12 : tensor<4x16x16xf32>, tensor<4x16x32xf32>) outs(%29 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %expanded_13 = tensor.expand_shape %30 [[0, 1], [2], [3]] output_shape [1, 4, 16, 32] : tensor<4x16x32xf32> into tensor<1x4x16x32xf32>
    %31 = tensor.empty() : tensor<1x4x16x32xf32>
    %32 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg3 : tensor<1x4x16x32xf32>) outs(%31 : tensor<1x4x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %34 = arith.negf %in : f32
      %35 = math.exp %34 : f32
      %36 = arith.addf %35, %cst_1 : f32
      %37 = arith.divf %cst_1, %36 : f32
      linalg.yield %37 : f32
    } -> tensor<1x4x16x32xf32>
    %33 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_13, %32 : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>) outs(%31 : tensor<1x4x16x32xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %34 = arith.mulf %in, %in_14 : f32
      linalg.yield %34 : f32
    } -> tensor<1x4x16x32xf32>
    return %33 : tensor<1x4x16x32xf32>
  }
}
