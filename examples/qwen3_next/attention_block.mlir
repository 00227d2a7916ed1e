func.func @qwen3_next_attention(%x: tensor<1x16x2048xf32>, %wq: tensor<2048x8192xf32>, %wk: tensor<2048x512xf32>, %wv: tensor<2048x512xf32>, %q_norm: tensor<256xf32>, %k_norm: tensor<256xf32>, %cos: tensor<16x64xf32>, %sin: tensor<16x64xf32>, %wo: tensor<4096x2048xf32>) -> tensor<1x16x2048xf32> attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %dim = arith.constant 256.0 : f32
  %eps = arith.constant 1.000000e-06 : f32
  %v1 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x16x2048xf32> into tensor<16x2048xf32>
  %v2 = tensor.empty() : tensor<16x8192xf32>
  %v3 = linalg.fill ins(%zero : f32) outs(%v2 : tensor<16x8192xf32>) -> tensor<16x8192xf32>
  %v4 = linalg.matmul ins(%v1, %wq : tensor<16x2048xf32>, tensor<2048x8192xf32>) outs(%v3 : tensor<16x8192xf32>) -> tensor<16x8192xf32>
  %v5 = tensor.empty() : tensor<16x512xf32>
  %v6 = linalg.fill ins(%zero : f32) outs(%v5 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %v7 = linalg.matmul ins(%v1, %wk : tensor<16x2048xf32>, tensor<2048x512xf32>) outs(%v6 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %v8 = tensor.empty() : tensor<16x512xf32>
  %v9 = linalg.fill ins(%zero : f32) outs(%v8 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %v10 = linalg.matmul ins(%v1, %wv : tensor<16x2048xf32>, tensor<2048x512xf32>) outs(%v9 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %v11 = tensor.expand_shape %v4 [[0, 1], [2, 3, 4]] output_shape [1, 16, 16, 2, 256] : tensor<16x8192xf32> into tensor<1x16x16x2x256xf32>
  %v12 = tensor.extract_slice %v11[0, 0, 0, 0, 0] [1, 16, 16, 1, 256] [1, 1, 1, 1, 1] : tensor<1x16x16x2x256xf32> to tensor<1x16x16x256xf32>
  %v13 = tensor.empty() : tensor<1x16x16x256xf32>
  %v14 = linalg.transpose ins(%v12 : tensor<1x16x16x256xf32>) outs(%v13 : tensor<1x16x16x256xf32>) permutation = [0, 2, 1, 3]
  %v15 = tensor.extract_slice %v11[0, 0, 0, 1, 0] [1, 16, 16, 1, 256] [1, 1, 1, 1, 1] : tensor<1x16x16x2x256xf32> to tensor<1x16x16x256xf32>
  %v16 = tensor.empty() : tensor<1x16x16x256xf32>
  %v17 = linalg.transpose ins(%v15 : tensor<1x16x16x256xf32>) outs(%v16 : tensor<1x16x16x256xf32>) permutation = [0, 2, 1, 3]
  %v18 = tensor.expand_shape %v7 [[0, 1], [2, 3]] output_shape [1, 16, 2, 256] : tensor<16x512xf32> into tensor<1x16x2x256xf32>
  %v19 = tensor.empty() : tensor<1x2x16x256xf32>
  %v20 = linalg.transpose ins(%v18 : tensor<1x16x2x256xf32>) outs(%v19 : tensor<1x2x16x256xf32>) permutation = [0, 2, 1, 3]
  %v21 = tensor.expand_shape %v10 [[0, 1], [2, 3]] output_shape [1, 16, 2, 256] : tensor<16x512xf32> into tensor<1x16x2x256xf32>
  %v22 = tensor.empty() : tensor<1x2x16x256xf32>
  %v23 = linalg.transpose ins(%v21 : tensor<1x16x2x256xf32>) outs(%v22 : tensor<1x2x16x256xf32>) permutation = [0, 2, 1, 3]
  %v24 = tensor.empty() : tensor<1x16x16xf32>
  %v25 = linalg.fill ins(%zero : f32) outs(%v24 : tensor<1x16x16xf32>) -> tensor<1x16x16xf32>
  %v26 = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%v14 : tensor<1x16x16x256xf32>) outs(%v25 : tensor<1x16x16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %sum = arith.addf %acc, %sq : f32
    linalg.yield %sum : f32
  } -> tensor<1x16x16xf32>
  %v27 = tensor.empty() : tensor<1x16x16x256xf32>
  %v28 = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s)>, affine_map<(b, h, s, d) -> (d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v14, %v26, %q_norm : tensor<1x16x16x256xf32>, tensor<1x16x16xf32>, tensor<256xf32>) outs(%v27 : tensor<1x16x16x256xf32>) {
  ^bb0(%a: f32, %s: f32, %w: f32, %o: f32):
    %mean = arith.divf %s, %dim : f32
    %var = arith.addf %mean, %eps : f32
    %inv = math.rsqrt %var : f32
    %y = arith.mulf %a, %inv : f32
    %w1 = arith.addf %w, %one : f32
    %z = arith.mulf %y, %w1 : f32
    linalg.yield %z : f32
  } -> tensor<1x16x16x256xf32>
  %v29 = tensor.extract_slice %v28[0, 0, 0, 0] [1, 16, 16, 32] [1, 1, 1, 1] : tensor<1x16x16x256xf32> to tensor<1x16x16x32xf32>
  %v30 = tensor.extract_slice %v28[0, 0, 0, 32] [1, 16, 16, 32] [1, 1, 1, 1] : tensor<1x16x16x256xf32> to tensor<1x16x16x32xf32>
  %v31 = tensor.extract_slice %cos[0, 0] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %v32 = tensor.extract_slice %cos[0, 32] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %v33 = tensor.extract_slice %sin[0, 0] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %v34 = tensor.extract_slice %sin[0, 32] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %v35 = tensor.empty() : tensor<1x16x16x32xf32>
  %v36 = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v29, %v30, %v31, %v33 : tensor<1x16x16x32xf32>, tensor<1x16x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) outs(%v35 : tensor<1x16x16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %c: f32, %sn: f32, %o: f32):
    %pc = arith.mulf %p, %c : f32
    %qs = arith.mulf %q, %sn : f32
    %r = arith.subf %pc, %qs : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x32xf32>
  %v37 = tensor.empty() : tensor<1x16x16x32xf32>
  %v38 = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v30, %v29, %v32, %v34 : tensor<1x16x16x32xf32>, tensor<1x16x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) outs(%v37 : tensor<1x16x16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %c: f32, %sn: f32, %o: f32):
    %pc = arith.mulf %p, %c : f32
    %qs = arith.mulf %q, %sn : f32
    %r = arith.addf %pc, %qs : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x32xf32>
  %v39 = tensor.insert_slice %v36 into %v28[0, 0, 0, 0] [1, 16, 16, 32] [1, 1, 1, 1] : tensor<1x16x16x32xf32> into tensor<1x16x16x256xf32>
  %v40 = tensor.insert_slice %v38 into %v39[0, 0, 0, 32] [1, 16, 16, 32] [1, 1, 1, 1] : tensor<1x16x16x32xf32> into tensor<1x16x16x256xf32>
  %v41 = tensor.empty() : tensor<1x2x16xf32>
  %v42 = linalg.fill ins(%zero : f32) outs(%v41 : tensor<1x2x16xf32>) -> tensor<1x2x16xf32>
  %v43 = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%v20 : tensor<1x2x16x256xf32>) outs(%v42 : tensor<1x2x16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %sum = arith.addf %acc, %sq : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x16xf32>
  %v44 = tensor.empty() : tensor<1x2x16x256xf32>
  %v45 = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s)>, affine_map<(b, h, s, d) -> (d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v20, %v43, %k_norm : tensor<1x2x16x256xf32>, tensor<1x2x16xf32>, tensor<256xf32>) outs(%v44 : tensor<1x2x16x256xf32>) {
  ^bb0(%a: f32, %s: f32, %w: f32, %o: f32):
    %mean = arith.divf %s, %dim : f32
    %var = arith.addf %mean, %eps : f32
    %inv = math.rsqrt %var : f32
    %y = arith.mulf %a, %inv : f32
    %w1 = arith.addf %w, %one : f32
    %z = arith.mulf %y, %w1 : f32
    linalg.yield %z : f32
  } -> tensor<1x2x16x256xf32>
  %v46 = tensor.extract_slice %v45[0, 0, 0, 0] [1, 2, 16, 32] [1, 1, 1, 1] : tensor<1x2x16x256xf32> to tensor<1x2x16x32xf32>
  %v47 = tensor.extract_slice %v45[0, 0, 0, 32] [1, 2, 16, 32] [1, 1, 1, 1] : tensor<1x2x16x256xf32> to tensor<1x2x16x32xf32>
  %v48 = tensor.extract_slice %cos[0, 0] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %v49 = tensor.extract_slice %cos[0, 32] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %v50 = tensor.extract_slice %sin[0, 0] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %v51 = tensor.extract_slice %sin[0, 32] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
  %v52 = tensor.empty() : tensor<1x2x16x32xf32>
  %v53 = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v46, %v47, %v48, %v50 : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) outs(%v52 : tensor<1x2x16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %c: f32, %sn: f32, %o: f32):
    %pc = arith.mulf %p, %c : f32
    %qs = arith.mulf %q, %sn : f32
    %r = arith.subf %pc, %qs : f32
    linalg.yield %r : f32
  } -> tensor<1x2x16x32xf32>
  %v54 = tensor.empty() : tensor<1x2x16x32xf32>
  %v55 = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v47, %v46, %v49, %v51 : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) outs(%v54 : tensor<1x2x16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %c: f32, %sn: f32, %o: f32):
    %pc = arith.mulf %p, %c : f32
    %qs = arith.mulf %q, %sn : f32
    %r = arith.addf %pc, %qs : f32
    linalg.yield %r : f32
  } -> tensor<1x2x16x32xf32>
  %v56 = tensor.insert_slice %v53 into %v45[0, 0, 0, 0] [1, 2, 16, 32] [1, 1, 1, 1] : tensor<1x2x16x32xf32> into tensor<1x2x16x256xf32>
  %v57 = tensor.insert_slice %v55 into %v56[0, 0, 0, 32] [1, 2, 16, 32] [1, 1, 1, 1] : tensor<1x2x16x32xf32> into tensor<1x2x16x256xf32>
  %v58 = gated_attention.attention %v40, %v57, %v23, %v17 {causal}
      : (tensor<1x16x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x16x16x256xf32>) -> tensor<1x16x16x256xf32>
  %v59 = tensor.empty() : tensor<1x16x16x256xf32>
  %v60 = linalg.transpose ins(%v58 : tensor<1x16x16x256xf32>) outs(%v59 : tensor<1x16x16x256xf32>) permutation = [0, 2, 1, 3]
  %v61 = tensor.collapse_shape %v60 [[0, 1], [2, 3]] : tensor<1x16x16x256xf32> into tensor<16x4096xf32>
  %v62 = tensor.empty() : tensor<16x2048xf32>
  %v63 = linalg.fill ins(%zero : f32) outs(%v62 : tensor<16x2048xf32>) -> tensor<16x2048xf32>
  %v64 = linalg.matmul ins(%v61, %wo : tensor<16x4096xf32>, tensor<4096x2048xf32>) outs(%v63 : tensor<16x2048xf32>) -> tensor<16x2048xf32>
  %v65 = tensor.expand_shape %v64 [[0, 1], [2]] output_shape [1, 16, 2048] : tensor<16x2048xf32> into tensor<1x16x2048xf32>
  return %v65 : tensor<1x16x2048xf32>
}
