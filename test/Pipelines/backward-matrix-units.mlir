// The CPU backward's products by --gated-attention-to-llvm's matrix-units:
// with avx512-bf16 a bf16 backward multiplies its five products of the
// key-block pass on vdpbf16ps (dY, P and dS rounded to bf16, as torch's and
// the GPU kernels' are: docs/Backward.md), also in the x86 assembly LLVM
// makes of it for a CPU without AVX-512 (-mcpu=x86-64: the function's
// target_features enable the instruction); with fma none does (f32
// operands); an f32 backward never does.
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=matrix-units=avx512-bf16 vector-bits=512" > %t.dot.mlir
// RUN: FileCheck %s --check-prefix=DOT --input-file=%t.dot.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.dot.mlir | llc -O2 -mcpu=x86-64 -o - | FileCheck %s --check-prefix=ASM
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=matrix-units=fma vector-bits=512" | FileCheck %s --check-prefix=FMA

// DOT-LABEL: llvm.func @bf16_backward
// DOT-SAME: target_features = #llvm.target_features<["+avx512f", "+avx512bf16"]>
// Five products of 64 x 64 blocks, each an 8 x 32 register tile unrolled
// over 2 pairs (32 dots; 512-bit vectors take 4 reduction steps an
// iteration), in the loop over the whole query blocks and in the one over
// the partial block (Sᵀ = K Qᵀ alone: 64).
// DOT-COUNT-320: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// DOT-NOT: dpbf16ps
// DOT-LABEL: llvm.func @f32_backward
// DOT-NOT: target_features
// DOT-NOT: dpbf16ps
// DOT: llvm.return

// ASM-LABEL: bf16_backward:
// ASM: vdpbf16ps
// ASM-LABEL: f32_backward:
// ASM-NOT: vdpbf16ps

// FMA-LABEL: llvm.func @bf16_backward
// FMA-NOT: target_features
// FMA-NOT: dpbf16ps
// FMA: llvm.return
// FMA-LABEL: llvm.func @f32_backward
// FMA-NOT: dpbf16ps
// FMA: llvm.return

func.func @bf16_backward(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %o: tensor<1x4x?x64xbf16>, %do: tensor<1x4x?x64xbf16>, %g: tensor<1x4x?x64xbf16>, %lse: tensor<1x4x?xf32>) -> (tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x4x?x64xbf16>) {
  %0:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {causal} : (tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?xf32>) -> (tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x4x?x64xbf16>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x4x?x64xbf16>
}

func.func @f32_backward(%q: tensor<1x4x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x64xf32>, %o: tensor<1x4x?x64xf32>, %do: tensor<1x4x?x64xf32>, %lse: tensor<1x4x?xf32>) -> (tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) {
  %0:3 = gated_attention.attention_backward %q, %k, %v, %o, %do lse(%lse) : (tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x4x?x64xf32>, tensor<1x4x?x64xf32>, tensor<1x4x?xf32>) -> (tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>)
  return %0#0, %0#1, %0#2 : tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>
}
