// Explicit tile options and bad options.
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="warps=2 key-block=32" | FileCheck %s --check-prefix=TILES
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu=warps=-1 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not gated-attention-opt %s --gated-attention-to-ptx=key-block=24 2>&1 | FileCheck %s --check-prefix=BAD16
// A key block whose tile cannot be split evenly over the threads leaves the
// op alone.
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="warps=16 key-block=16" | FileCheck %s --check-prefix=UNEVEN

// 2 warps: 32 rows per CTA; 32-key blocks: 32x128 + 4 x 32x128 bf16.
// TILES: gpu.launch_func {{.+}} threads in (%c64, {{.+}}) dynamic_shared_memory_size %c40960_i32
// TILES: known_block_size = array<i32: 64, 1, 1>
// TILES: memref<2x32x128xbf16, #gpu.address_space<workgroup>>

// BAD: error: warps and key-block must not be negative
// BAD16: error: key-block must be a multiple of 16 (the K of the mma), got 24

// UNEVEN: gated_attention.attention
// UNEVEN-NOT: gpu.launch_func
func.func @f(%q: tensor<1x2x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>, %g: tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g : (tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>) -> tensor<1x2x?x128xbf16>
  return %0 : tensor<1x2x?x128xbf16>
}
