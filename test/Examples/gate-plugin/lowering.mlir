// RUN: gated-attention-opt %s --load-dialect-plugin=%gate_variants_plugin \
// RUN:   --split-input-file --gated-attention-tile | FileCheck %s --check-prefix=TILE
// RUN: gated-attention-opt %s --load-dialect-plugin=%gate_variants_plugin \
// RUN:   --split-input-file --convert-gated-attention-to-nvgpu | FileCheck %s --check-prefix=GPU
// RUN: gated-attention-opt %s --load-dialect-plugin=%gate_variants_plugin \
// RUN:   --split-input-file --gated-attention-to-llvm | FileCheck %s --check-prefix=LLVM
// The lowerings ask the plugin's attributes for their activation: it lands
// in the fused epilogue of the tiled CPU form (after both key loops, once
// per output element) and of the tensor-core kernel, and reaches LLVM.

// TILE-LABEL: func.func @tanh_gate
// TILE:         scf.forall
// Unmasked and masked key blocks: no gate math inside.
// TILE:           scf.for {{.+}} iter_args
// TILE-NOT:         math.tanh
// TILE:             scf.yield {{.+}} : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, i1, f32, f32
// TILE:           scf.for {{.+}} iter_args
// TILE-NOT:         math.tanh
// TILE:             scf.yield {{.+}} : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, i1, f32, f32
// The epilogue: O / l, tanh(G), their product.
// TILE:           linalg.generic
// TILE:             %[[T:.+]] = math.tanh %{{.+}} : f32
// TILE:             arith.mulf %{{.+}}, %[[T]] : f32
// TILE:           tensor.insert_slice
// TILE:         scf.forall.in_parallel

// LLVM-LABEL: llvm.func @tanh_gate
// LLVM:         llvm.intr.tanh
func.func @tanh_gate(%q: tensor<1x2x100x32xf32>, %k: tensor<1x2x100x32xf32>,
                     %v: tensor<1x2x100x32xf32>, %g: tensor<1x2x100x32xf32>)
    -> tensor<1x2x100x32xf32> {
  %r = gated_attention.attention %q, %k, %v, %g {gate = #gate_variants.tanh}
      : (tensor<1x2x100x32xf32>, tensor<1x2x100x32xf32>, tensor<1x2x100x32xf32>,
         tensor<1x2x100x32xf32>) -> tensor<1x2x100x32xf32>
  return %r : tensor<1x2x100x32xf32>
}

// -----

// The tensor-core kernel (f16/bf16 only).
// TILE-LABEL: func.func @tanh_gate_bf16
// GPU-LABEL: gpu.func @gated_attention_bf16_h2x2_d64_causal
// GPU:         nvvm.mma.sync
// GPU:         %[[T:.+]] = math.tanh %{{.+}} : f32
// GPU:         arith.mulf %{{.+}}, %[[T]] : f32
// GPU:         gpu.return
func.func @tanh_gate_bf16(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x128x64xbf16>,
                          %v: tensor<1x2x128x64xbf16>, %g: tensor<1x2x128x64xbf16>)
    -> tensor<1x2x128x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal, gate = #gate_variants.tanh}
      : (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>,
         tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16>
  return %r : tensor<1x2x128x64xbf16>
}

// -----

// The temperature sigmoid, T = 4: sigmoid(g * 0.25) in the epilogue.
// TILE-LABEL: func.func @temperature_gate
// TILE:           scf.for
// TILE:             scf.yield {{.+}} : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, i1, f32, f32
// TILE:           scf.for
// TILE:             scf.yield {{.+}} : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, i1, f32, f32
// TILE:             %[[C:.+]] = arith.constant 2.500000e-01 : f32
// TILE-NEXT:        %[[Y:.+]] = arith.mulf %{{.+}}, %[[C]] : f32
// TILE:             %[[N:.+]] = arith.negf %[[Y]] : f32
// TILE-NEXT:        math.exp %[[N]] : f32
// TILE:           tensor.insert_slice
// LLVM-LABEL: llvm.func @temperature_gate
// LLVM:         llvm.mlir.constant(dense<2.500000e-01> : vector<
func.func @temperature_gate(%q: tensor<1x2x100x32xf32>, %k: tensor<1x2x100x32xf32>,
                            %v: tensor<1x2x100x32xf32>, %g: tensor<1x2x100x32xf32>)
    -> tensor<1x2x100x32xf32> {
  %r = gated_attention.attention %q, %k, %v, %g
      {gate = #gate_variants.sigmoid<temperature = 4.0 : f32>}
      : (tensor<1x2x100x32xf32>, tensor<1x2x100x32xf32>, tensor<1x2x100x32xf32>,
         tensor<1x2x100x32xf32>) -> tensor<1x2x100x32xf32>
  return %r : tensor<1x2x100x32xf32>
}
