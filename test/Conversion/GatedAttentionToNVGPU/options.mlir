// Explicit tile options and bad options.
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="warps=2 key-block=32" | FileCheck %s --check-prefix=TILES
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu=warps=-1 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not gated-attention-opt %s --gated-attention-to-ptx=key-block=24 2>&1 | FileCheck %s --check-prefix=BAD16
// Tiles the user chose that the kernel cannot use are an error at the op,
// not a silent fall back to the SIMT kernel: too many warps, a K/V tile that
// cannot be split evenly over the threads, shared memory over the chip's.
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="warps=16 key-block=16" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="warps=3 key-block=16" 2>&1 | FileCheck %s --check-prefix=UNEVEN
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="key-block=256 chip=sm_86" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu=chip=sm_75 2>&1 | FileCheck %s --check-prefix=CHIP
// The wgmma kernel: one or two consumer warpgroups, at most 256 keys (the
// N of a wgmma), and only on sm_90a.
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma warps=6" 2>&1 | FileCheck %s --check-prefix=WG-WARPS
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma key-block=512" 2>&1 | FileCheck %s --check-prefix=WG-KEYS
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_80 kernel=wgmma" 2>&1 | FileCheck %s --check-prefix=WG-CHIP
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="kernel=fast" 2>&1 | FileCheck %s --check-prefix=WG-KIND
// kernel=auto: the wgmma forward on sm_90a, unless the user's warps are a
// count it cannot run (then mma.sync, as on every other chip).
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu=chip=sm_90a | FileCheck %s --check-prefix=AUTO90A
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a warps=2" | FileCheck %s --check-prefix=AUTO90A-WARPS
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu=chip=sm_90 | FileCheck %s --check-prefix=AUTO90

// 2 warps: 32 rows per CTA; 32-key blocks: 32x128 + 4 x 32x128 bf16.
// TILES: gpu.launch_func {{.+}} threads in (%c64, {{.+}}) dynamic_shared_memory_size %c40960_i32
// TILES: known_block_size = array<i32: 64, 1, 1>
// TILES: memref<2x32x128xbf16, #gpu.address_space<workgroup>>

// BAD: options.mlir:[[#@LINE+12]]:8: error: tensor-core kernel for sm_90: warps must be in [1, 8], got -1
// BAD16: error: option 'key-block' must be a multiple of 16 (the K of the mma), got 24

// WARPS: error: tensor-core kernel for sm_90: warps must be in [1, 8], got 16
// UNEVEN: error: tensor-core kernel for sm_90: key-block x head dim / 8 (16 x 128 / 8) must be a multiple of the 96 threads
// SMEM: error: tensor-core kernel for sm_86: the kernel's tiles need 278528 bytes of shared memory, more than the 101376 a CTA may use on this chip
// CHIP: error: unknown chip 'sm_75'; expected sm_80, sm_86, sm_89, sm_90, sm_90a
// WG-WARPS: options.mlir:[[#@LINE+5]]:8: error: tensor-core kernel for sm_90a: the sm_90a kernel runs one or two consumer warpgroups: warps must be 4 or 8 (or 0), got 6
// WG-KEYS: error: tensor-core kernel for sm_90a: key-block must be a multiple of 16 in [16, 256] for the sm_90a kernel, got 512
// WG-CHIP: error: kernel=wgmma needs chip=sm_90a (wgmma and setmaxnreg exist only on sm_90a), got chip=sm_80
// WG-KIND: error: unknown kernel 'fast'; expected auto, mma-sync or wgmma
func.func @f(%q: tensor<1x2x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>, %g: tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16>
  return %0 : tensor<1x2x?x128xbf16>
}

// The grid is (row blocks, Hq, B): CUDA caps y and z at 65535.
// RUN: not gated-attention-opt %S/Inputs/many-heads.mlir --convert-gated-attention-to-nvgpu 2>&1 | FileCheck %s --check-prefix=GRID
// GRID: many-heads.mlir:3:8: error: tensor-core kernel: Hq = 70000 must be at most 65535 (CUDA's grid y and z limit)

// AUTO90A-LABEL: gpu.func @gated_attention_bf16_h2x2_d128_sm90a
// AUTO90A: nvvm.setmaxregister
// AUTO90A: nvvm.wgmma.mma_async
// AUTO90A-NOT: nvgpu.mma.sync
// AUTO90A-WARPS-LABEL: gpu.func @gated_attention_bf16_h2x2_d128(
// AUTO90A-WARPS-NOT: wgmma
// AUTO90-LABEL: gpu.func @gated_attention_bf16_h2x2_d128(
// AUTO90-NOT: wgmma
