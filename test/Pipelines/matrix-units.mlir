// The bf16 products of --gated-attention-to-llvm by matrix-units, checked in
// the lowered IR and in the x86 assembly LLVM makes of it for a CPU without
// AVX-512 (-mcpu=x86-64): the function's target_features, not the machine
// compiling it, enable vdpbf16ps.
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=matrix-units=avx512-bf16 vector-bits=512" > %t.dot.mlir
// RUN: FileCheck %s --check-prefix=DOT --input-file=%t.dot.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.dot.mlir | llc -O2 -mcpu=x86-64 -o - | FileCheck %s --check-prefix=ASM
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=matrix-units=fma vector-bits=512" | FileCheck %s --check-prefix=FMA
// matrix-units=amx: tile loads, tdpbf16ps and tile stores on the function's AMX
// features, and the constructor asking Linux for the tile data; the X86
// backend configures the tiles (ldtilecfg) from their static shapes.
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=matrix-units=amx vector-bits=512" > %t.amx.mlir
// RUN: FileCheck %s --check-prefix=AMX --input-file=%t.amx.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.amx.mlir | llc -O2 -mcpu=x86-64 -o - | FileCheck %s --check-prefix=AMX-ASM
// RUN: mlir-translate --mlir-to-llvmir %t.amx.mlir | llc -O2 -mattr=+amx-tile,+amx-bf16 -o - | FileCheck %s --check-prefix=AMX-ASM
// A 256-bit target (AVX2) never takes the dot products, host or not.
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=vector-bits=256" | FileCheck %s --check-prefix=FMA
// target-cpu, not the machine compiling, decides what matrix-units=host and
// vector-bits=0 mean: an AVX2 CPU gets FMAs on 6 x 16 register tiles, Zen 4
// and Zen 5 vdpbf16ps and 8 x 32 tiles, Sapphire Rapids AMX tiles, Skylake-X
// (no AVX512-BF16) FMAs, and Cooper Lake, an Intel CPU with AVX512-BF16 but
// no AMX, FMAs with 8 x 32 tiles too: Intel issues vdpbf16ps half as often
// as an FMA (the tiles as --dump-pass-pipeline prints the pipeline's
// options).
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=x86-64-v3" | FileCheck %s --check-prefix=FMA
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=x86-64-v3" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=AVX2
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=znver4" | FileCheck %s --check-prefix=DOT
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=znver4" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=AVX512
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=sapphirerapids" | FileCheck %s --check-prefix=AMX
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=skylake-avx512" | FileCheck %s --check-prefix=FMA
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=znver5" | FileCheck %s --check-prefix=DOT
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=cooperlake" | FileCheck %s --check-prefix=FMA
// RUN: gated-attention-opt %s "--gated-attention-to-llvm=target-cpu=cooperlake" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=AVX512-FMA

// DOT-LABEL: llvm.func @bf16_gqa_causal
// DOT-SAME: target_features = #llvm.target_features<["+avx512f", "+avx512bf16"]>
// DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// P rounded to bf16 by vcvtneps2bf16, not arith-expand's integer rounding.
// DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.cvtneps2bf16.512"
// DOT-LABEL: llvm.func @f32_attention
// DOT-NOT: target_features
// DOT-NOT: dpbf16ps
// DOT: llvm.return

// AMX-LABEL: llvm.func @bf16_gqa_causal
// AMX-SAME: target_features = #llvm.target_features<["+avx512f", "+avx512bf16", "+amx-tile", "+amx-bf16"]>
// AMX-NOT: dpbf16ps.512
// AMX: llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// AMX: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// AMX: llvm.call_intrinsic "llvm.x86.avx512bf16.cvtneps2bf16.512"
// AMX: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// AMX-NOT: dpbf16ps.512
// AMX-LABEL: llvm.func @f32_attention
// AMX-NOT: target_features
// AMX-NOT: llvm.x86
// AMX: llvm.return
// AMX: llvm.func internal @__gated_attention_request_amx()
// AMX: llvm.mlir.global_ctors ctors = [@__gated_attention_request_amx]

// AMX-ASM: ldtilecfg
// AMX-ASM: tileloadd
// AMX-ASM: tdpbf16ps %tmm{{[0-7]}}, %tmm{{[0-7]}}, %tmm{{[0-7]}}
// AMX-ASM: tilestored
// AMX-ASM-NOT: vdpbf16ps
// AMX-ASM: __gated_attention_request_amx:
// AMX-ASM: syscall

// ASM-LABEL: bf16_gqa_causal:
// ASM-NOT: __truncsfbf2
// ASM: vdpbf16ps %zmm{{[0-9]+}}, %zmm{{[0-9]+}}, %zmm{{[0-9]+}}
// ASM: vcvtneps2bf16 %zmm{{[0-9]+}}, %ymm{{[0-9]+}}
// ASM-NOT: __truncsfbf2
// ASM-LABEL: f32_attention:

// AVX2: gated-attention-tile-backward{{.*}}matrix-units=fma
// AVX2: gated-attention-vectorize-tiles{{.*}}matrix-units=fma register-cols=16 register-depth=32 register-rows=6}
// AVX512: gated-attention-tile-backward{{.*}}matrix-units=avx512-bf16
// AVX512: gated-attention-vectorize-tiles{{.*}}matrix-units=avx512-bf16 register-cols=32 register-depth=4 register-rows=8}
// AVX512-FMA: gated-attention-tile-backward{{.*}}matrix-units=fma
// AVX512-FMA: gated-attention-vectorize-tiles{{.*}}matrix-units=fma register-cols=32 register-depth=4 register-rows=8}

// FMA-NOT: dpbf16ps
// FMA-NOT: target_features
// FMA-LABEL: llvm.func @bf16_gqa_causal
// FMA-NOT: dpbf16ps
// FMA-NOT: cvtneps2bf16
// FMA-NOT: target_features

func.func @bf16_gqa_causal(%q: tensor<1x2x128x32xbf16>, %k: tensor<1x1x128x32xbf16>,
                           %v: tensor<1x1x128x32xbf16>) -> tensor<1x2x128x32xbf16> {
  %o = gated_attention.attention %q, %k, %v {causal}
      : (tensor<1x2x128x32xbf16>, tensor<1x1x128x32xbf16>, tensor<1x1x128x32xbf16>)
      -> tensor<1x2x128x32xbf16>
  return %o : tensor<1x2x128x32xbf16>
}

func.func @f32_attention(%q: tensor<1x2x128x32xf32>, %k: tensor<1x1x128x32xf32>,
                         %v: tensor<1x1x128x32xf32>) -> tensor<1x2x128x32xf32> {
  %o = gated_attention.attention %q, %k, %v
      : (tensor<1x2x128x32xf32>, tensor<1x1x128x32xf32>, tensor<1x1x128x32xf32>)
      -> tensor<1x2x128x32xf32>
  return %o : tensor<1x2x128x32xf32>
}
