#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (0, d1)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> ()>
#map5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#map6 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map8 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map9 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map10 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map11 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @forward(%arg0: tensor<1x4x16x32xf32>, %arg1: tensor<1x2x16x32xf32>, %arg2: tensor<1x2x16x32xf32>, %arg3: tensor<1x4x16x32xf32>) -> tensor<1x16x128xf32> {
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 1.000000e+00 : f32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_3 = arith.constant dense<-3.40282347E+38> : tensor<16x16xf32>
    %cst_4 = arith.constant 0.17677669529663689 : f64
    %0 = tensor.empty() : tensor<16xi64>
    %1 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%0 : tensor<16xi64>) {
    ^bb0(%out: i64):
      %36 = linalg.index 0 : index
      %37 = arith.index_cast %36 : index to i64
      linalg.yield %37 : i64
    } -> tensor<16xi64>
    %expanded = tensor.expand_shape %1 [[0, 1]] output_shape [1, 16] : tensor<16xi64> into tensor<1x16xi64>
    %expanded_5 = tensor.expand_shape %1 [[0, 1]] output_shape [16, 1] : tensor<16xi64> into tensor<16x1xi64>
    %2 = tensor.empty() : tensor<16x16xi64>
    %3 = linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded, %expanded_5 : tensor<1x16xi64>, tensor<16x1xi64>) outs(%2 : tensor<16x16xi64>) {
    ^bb0(%in: i64, %in_17: i64, %out: i64):
      %36 = arith.subi %in, %in_17 : i64
      linalg.yield %36 : i64
    } -> tensor<16x16xi64>
    %4 = tensor.empty() : tensor<16x16xi1>
    %5 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<16x16xi64>) outs(%4 : tensor<16x16xi1>) {
    ^bb0(%in: i64, %out: i1):
      %36 = arith.cmpi sge, %in, %c1_i64 : i64
      linalg.yield %36 : i1
    } -> tensor<16x16xi1>
    %6 = tensor.empty() : tensor<16x16xf32>
    %7 = linalg.generic {indexing_maps = [#map3, #map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%5, %cst_3, %cst_2 : tensor<16x16xi1>, tensor<16x16xf32>, tensor<f32>) outs(%6 : tensor<16x16xf32>) {
    ^bb0(%in: i1, %in_17: f32, %in_18: f32, %out: f32):
      %36 = arith.select %in, %in_17, %in_18 : f32
      linalg.yield %36 : f32
    } -> tensor<16x16xf32>
    %8 = tensor.empty() : tensor<1x2x2x16x32xf32>
    %9 = linalg.generic {indexing_maps = [#map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : tensor<1x2x16x32xf32>) outs(%8 : tensor<1x2x2x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x2x2x16x32xf32>
    %collapsed = tensor.collapse_shape %9 [[0], [1, 2], [3], [4]] : tensor<1x2x2x16x32xf32> into tensor<1x4x16x32xf32>
    %10 = tensor.empty() : tensor<1x4x32x16xf32>
    %transposed = linalg.transpose ins(%collapsed : tensor<1x4x16x32xf32>) outs(%10 : tensor<1x4x32x16xf32>) permutation = [0, 1, 3, 2] 
    %collapsed_6 = tensor.collapse_shape %arg0 [[0, 1], [2], [3]] : tensor<1x4x16x32xf32> into tensor<4x16x32xf32>
    %collapsed_7 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<1x4x32x16xf32> into tensor<4x32x16xf32>
    %11 = tensor.empty() : tensor<4x16x16xf32>
    %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %13 = linalg.batch_matmul ins(%collapsed_6, %collapsed_7 : tensor<4x16x32xf32>, tensor<4x32x16xf32>) outs(%12 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %expanded_8 = tensor.expand_shape %13 [[0, 1], [2], [3]] output_shape [1, 4, 16, 16] : tensor<4x16x16xf32> into tensor<1x4x16x16xf32>
    %14 = tensor.empty() : tensor<1x4x16x16xf32>
    %15 = linalg.generic {indexing_maps = [#map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_8 : tensor<1x4x16x16xf32>) outs(%14 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %36 = arith.truncf %cst_4 : f64 to f32
      %37 = arith.mulf %in, %36 : f32
      linalg.yield %37 : f32
    } -> tensor<1x4x16x16xf32>
    %16 = linalg.generic {indexing_maps = [#map7, #map8, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%15, %7 : tensor<1x4x16x16xf32>, tensor<16x16xf32>) outs(%14 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_17: f32, %out: f32):
      %36 = arith.addf %in, %in_17 : f32
      linalg.yield %36 : f32
    } -> tensor<1x4x16x16xf32>
    %17 = tensor.empty() : tensor<1x4x16xi64>
    %18 = linalg.fill ins(%c0_i64 : i64) outs(%17 : tensor<1x4x16xi64>) -> tensor<1x4x16xi64>
    %19 = tensor.empty() : tensor<1x4x16xf32>
    %20 = linalg.fill ins(%cst_0 : f32) outs(%19 : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
    %21:2 = linalg.generic {indexing_maps = [#map7, #map9, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%16 : tensor<1x4x16x16xf32>) outs(%20, %18 : tensor<1x4x16xf32>, tensor<1x4x16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_17: i64):
      %36 = linalg.index 3 : index
      %37 = arith.index_cast %36 : index to i64
      %38 = arith.maximumf %in, %out : f32
      %39 = arith.cmpf ogt, %in, %out : f32
      %40 = arith.select %39, %37, %out_17 : i64
      linalg.yield %38, %40 : f32, i64
    } -> (tensor<1x4x16xf32>, tensor<1x4x16xi64>)
    %expanded_9 = tensor.expand_shape %21#0 [[0], [1], [2, 3]] output_shape [1, 4, 16, 1] : tensor<1x4x16xf32> into tensor<1x4x16x1xf32>
    %22 = linalg.generic {indexing_maps = [#map7, #map10, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%16, %expanded_9 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%14 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_17: f32, %out: f32):
      %36 = arith.subf %in, %in_17 : f32
      linalg.yield %36 : f32
    } -> tensor<1x4x16x16xf32>
    %23 = linalg.generic {indexing_maps = [#map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%22 : tensor<1x4x16x16xf32>) outs(%14 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %36 = math.exp %in : f32
      linalg.yield %36 : f32
    } -> tensor<1x4x16x16xf32>
    %24 = tensor.empty() : tensor<1x4x16x1xf32>
    %25 = linalg.fill ins(%cst : f32) outs(%24 : tensor<1x4x16x1xf32>) -> tensor<1x4x16x1xf32>
    %26 = linalg.generic {indexing_maps = [#map7, #map10], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%23 : tensor<1x4x16x16xf32>) outs(%25 : tensor<1x4x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %36 = arith.addf %in, %out : f32
      linalg.yield %36 : f32
    } -> tensor<1x4x16x1xf32>
    %27 = linalg.generic {indexing_maps = [#map7, #map10, #map7], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%23, %26 : tensor<1x4x16x16xf32>, tensor<1x4x16x1xf32>) outs(%14 : tensor<1x4x16x16xf32>) {
    ^bb0(%in: f32, %in_17: f32, %out: f32):
      %36 = arith.divf %in, %in_17 : f32
      linalg.yield %36 : f32
    } -> tensor<1x4x16x16xf32>
    %28 = linalg.generic {indexing_maps = [#map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg2 : tensor<1x2x16x32xf32>) outs(%8 : tensor<1x2x2x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x2x2x16x32xf32>
    %collapsed_10 = tensor.collapse_shape %27 [[0, 1], [2], [3]] : tensor<1x4x16x16xf32> into tensor<4x16x16xf32>
    %collapsed_11 = tensor.collapse_shape %28 [[0, 1, 2], [3], [4]] : tensor<1x2x2x16x32xf32> into tensor<4x16x32xf32>
    %29 = tensor.empty() : tensor<4x16x32xf32>
    %30 = linalg.fill ins(%cst : f32) outs(%29 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %31 = linalg.batch_matmul ins(%collapsed_10, %collapsed_11 : tensor<4x16x16xf32>, tensor<4x16x32xf32>) outs(%30 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
    %expanded_12 = tensor.expand_shape %31 [[0, 1], [2], [3]] output_shape [1, 4, 16, 32] : tensor<4x16x32xf32> into tensor<1x4x16x32xf32>
    %32 = tensor.empty() : tensor<1x16x4x32xf32>
    %transposed_13 = linalg.transpose ins(%expanded_12 : tensor<1x4x16x32xf32>) outs(%32 : tensor<1x16x4x32xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_14 = tensor.collapse_shape %transposed_13 [[0], [1], [2, 3]] : tensor<1x16x4x32xf32> into tensor<1x16x128xf32>
    %transposed_15 = linalg.transpose ins(%arg3 : tensor<1x4x16x32xf32>) outs(%32 : tensor<1x16x4x32xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_16 = tensor.collapse_shape %transposed_15 [[0], [1], [2, 3]] : tensor<1x16x4x32xf32> into tensor<1x16x128xf32>
    %33 = tensor.empty() : tensor<1x16x128xf32>
    %34 = linalg.generic {indexing_maps = [#map11, #map11], iterator_types = ["parallel", "parallel", "parallel"]} ins(%collapsed_16 : tensor<1x16x128xf32>) outs(%33 : tensor<1x16x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %36 = arith.negf %in : f32
      %37 = math.exp %36 : f32
      %38 = arith.addf %37, %cst_1 : f32
      %39 = arith.divf %cst_1, %38 : f32
      linalg.yield %39 : f32
    } -> tensor<1x16x128xf32>
    %35 = linalg.generic {indexing_maps = [#map11, #map11, #map11], iterator_types = ["parallel", "parallel", "parallel"]} ins(%collapsed_14, %34 : tensor<1x16x128xf32>, tensor<1x16x128xf32>) outs(%33 : tensor<1x16x128xf32>) {
    ^bb0(%in: f32, %in_17: f32, %out: f32):
      %36 = arith.mulf %in, %in_17 : f32
      linalg.yield %36 : f32
    } -> tensor<1x16x128xf32>
    return %35 : tensor<1x16x128xf32>
  }
}
