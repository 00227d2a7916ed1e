#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
module {
  func.func @forward(%arg0: tensor<1x4x16x32xf32>, %arg1: tensor<1x4x16x32xf32>, %arg2: tensor<1x4x16x32xf32>, %arg3: tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 1.000000e+00 : f32
    %cst_2 = arith.constant 5.6568542494923806 : f64
    %expanded = tensor.expand_shape %arg0 [[0], [1], [2], [3, 4]] output_shape [1, 4, 16, 32, 1] : tensor<1x4x16x32xf32> into tensor<1x4x16x32x1xf32>
    %expanded_3 = tensor.expand_shape %arg1 [[0], [1], [2], [3, 4]] output_shape [1, 4, 16, 32, 1] : tensor<1x4x16x32xf32> into tensor<1x4x16x32x1xf32>
    %0 = tensor.empty() : tensor<4x16x32x1x1xf32>
    %transposed = linalg.transpose ins(%expanded : tensor<1x4x16x32x1xf32>) outs(%0 : tensor<4x16x32x1x1xf32>) permutation = [1, 2, 3, 0, 4] 
    %collapsed = tensor.collapse_shape %transposed [[0], [1], [2, 3, 4]] : tensor<4x16x32x1x1xf32> into tensor<4x16x32xf32>
    %1 = tensor.empty() : tensor<4x32x1x16x1xf32>
    %transposed_4 = linalg.transpose ins(%expanded_3 : tensor<1x4x16x32x1xf32>) outs(%1 : tensor<4x32x1x16x1xf32>) permutation = [1, 3, 0, 2, 4] 
    %collapsed_5 = tensor.collapse_shape %transposed_4 [[0], [1], [2, 3, 4]] : tensor<4x32x1x16x1xf32> into tensor<4x32x16xf32>
    %2 = tensor.empty() : tensor<4x16x16xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %4 = linalg.batch_matmul ins(%collapsed, %collapsed_5 : tensor<4x16x32xf32>, tensor<4x32x16xf32>) outs(%3 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %expanded_6 = tensor.expand_shape %4 [[0], [1], [2, 3, 4]] output_shape [4, 16, 1, 1, 16] : tensor<4x16x16xf32> into tensor<4x16x1x1x16xf32>
    %5 = tensor.empty() : tensor<1x4x16x16x1xf32>
    %transposed_7 = linalg.transpose ins(%expanded_6 : tensor<4x16x1x1x16xf32>) outs(%5 : tensor<1x4x16x16x1xf32>) permutation = [3, 0, 1, 4, 2] 
    %collapsed_8 = tensor.collapse_shape %transposed_7 [[0], [1], [2], [3, 4]] : tensor<1x4x16x16x1xf32> into tensor<1x4x16x16xf32>
    %6 = tensor.empty() : tensor<1x4x16x16xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%collapsed_8 : tensor<1x4x16x16xf32>) outs(%6 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.truncf %cst_2 : f64 to f32
      %29 = arith.divf %in, %28 : f32
      linalg.yield %29 : f32
    } -> tensor<1x4x16x16xf32>
    %8 = tensor.empty() : tensor<1x4x16xi64>
    %9 = linalg.fill ins(%c0_i64 : i64) outs(%8 : tensor<1x4x16xi64>) -> tensor<1x4x16xi64>
    %10 = tensor.empty() : tensor<1x4x16xf32>
    %11 = linalg.fill ins(%cst_0 : f32) outs(%10 : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
    %12:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%7 : tensor<1x4x16x16xf32>) outs(%11, %9 : tensor<1x4x16xf32>, tensor<1x4x16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_19: i64):
      %28 = linalg.index 3 : index
      %29 = arith.index_cast %28 : index to i64
      %30 = arith.maximumf %in, %out : f32
      %31 = arith.cmpf ogt, %in, %out : f32
      %32 = arith.select %31, %29, %out_19 : i64
      linalg.yield %30, %32 : f32, i64
    } -> (tensor<1x4x16xf32>, tensor<1x4x16xi64>)
    %expanded_9 = tensor.expand_shape %12#0 [[0], [1], [2, 3]] output_shape [1, 4, 16, 1] : tensor<1x4x16xf32> into tensor<1x4x16x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %expanded_9 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%6 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_19: f32, %out: f32):
      %28 = arith.subf %in, %in_19 : f32
      linalg.yield %28 : f32
    } -> tensor<1x4x16x16xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%13 : tensor<1x4x16x16xf32>) outs(%6 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = math.exp %in : f32
      linalg.yield %28 : f32
    } -> tensor<1x4x16x16xf32>
    %15 = tensor.empty() : tensor<1x4x16x1xf32>
    %16 = linalg.fill ins(%cst : f32) outs(%15 : tensor<1x4x16x1xf32>) -> tensor<1x4x16x1xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%14 : tensor<1x4x16x16xf32>) outs(%16 : tensor<1x4x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.addf %in, %out : f32
      linalg.yield %28 : f32
    } -> tensor<1x4x16x1xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%14, %17 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%6 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_19: f32, %out: f32):
      %28 = arith.divf %in, %in_19 : f32
      linalg.yield %28 : f32
    } -> tensor<1x4x16x16xf32>
    %expanded_10 = tensor.expand_shape %18 [[0], [1], [2], [3, 4]] output_shape [1, 4, 16, 16, 1] : tensor<1x4x16x16xf32> into tensor<1x4x16x16x1xf32>
    %expanded_11 = tensor.expand_shape %arg2 [[0], [1], [2], [3, 4]] output_shape [1, 4, 16, 32, 1] : tensor<1x4x16x32xf32> into tensor<1x4x16x32x1xf32>
    %19 = tensor.empty() : tensor<4x16x16x1x1xf32>
    %transposed_12 = linalg.transpose ins(%expanded_10 : tensor<1x4x16x16x1xf32>) outs(%19 : tensor<4x16x16x1x1xf32>) permutation = [1, 2, 3, 0, 4] 
    %collapsed_13 = tensor.collapse_shape %transposed_12 [[0], [1], [2, 3, 4]] : tensor<4x16x16x1x1xf32> into tensor<4x16x16xf32>
    %20 = tensor.empty() : tensor<4x16x1x32x1xf32>
    %transposed_14 = linalg.transpose ins(%expanded_11 : tensor<1x4x16x32x1xf32>) outs(%20 : tensor<4x16x1x32x1xf32>) permutation = [1, 2, 0, 3, 4] 
    %collapsed_15 = tensor.collapse_shape %transposed_14 [[0], [1], [2, 3, 4]] : tensor<4x16x1x32x1xf32> into tensor<4x16x32xf32>
    %21 = tensor.empty() : tensor<4x16x32xf32>
    %22 = linalg.fill ins(%cst : f32) outs(%21 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %23 = linalg.batch_matmul ins(%collapsed_13, %collapsed_15 : tensor<4x16x16xf32>, tensor<4x16x32xf32>) outs(%22 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %expanded_16 = tensor.expand_shape %23 [[0], [1], [2, 3, 4]] output_shape [4, 16, 1, 1, 32] : tensor<4x16x32xf32> into tensor<4x16x1x1x32xf32>
    %24 = tensor.empty() : tensor<1x4x16x32x1xf32>
    %transposed_17 = linalg.transpose ins(%expanded_16 : tensor<4x16x1x1x32xf32>) outs(%24 : tensor<1x4x16x32x1xf32>) permutation = [3, 0, 1, 4, 2] 
    %collapsed_18 = tensor.collapse_shape %transposed_17 [[0], [1], [2], [3, 4]] : tensor<1x4x16x32x1xf32> into tensor<1x4x16x32xf32>
    %25 = tensor.empty() : tensor<1x4x16x32xf32>
    %26 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg3 : tensor<1x4x16x32xf32>) outs(%25 : tensor<1x4x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.negf %in : f32
      %29 = math.exp %28 : f32
      %30 = arith.addf %29, %cst_1 : f32
      %31 = arith.divf %cst_1, %30 : f32
      linalg.yield %31 : f32
    } -> tensor<1x4x16x32xf32>
    %27 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%collapsed_18, %26 : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>) outs(%25 : tensor<1x4x16x32xf32>) {
    ^bb0(%in: f32, %in_19: f32, %out: f32):
      %28 = arith.mulf %in, %in_19 : f32
      linalg.yield %28 : f32
    } -> tensor<1x4x16x32xf32>
    return %27 : tensor<1x4x16x32xf32>
  }
}
