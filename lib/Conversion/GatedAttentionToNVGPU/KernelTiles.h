//===- KernelTiles.h - the flash kernels' tiles and checks ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Which tiles a flash kernel takes when the user leaves them open, and why
// an op, its tiles or its layout cannot have a tensor-core kernel at all:
// the decisions made about a kernel before its interface exists.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_TILES_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_TILES_H

#include "FlashKernelConfig.h"

namespace mlir::gated_attention::flash {

/// Upper bounds of the tile options: 8 warps of 255-register threads fill
/// an SM's 64K registers; 1024 keys per block is beyond any chip's shared
/// memory at the smallest head dim. CUDA caps grid y and z at 65535.
constexpr int64_t kMaxWarps = 8;
constexpr int64_t kMaxKeyBlock = 1024;
constexpr int64_t kMaxGridYZ = 65535;
/// The kernels compare query and key rows with their bounds in 32 bits (the
/// masks, the copies' row checks, packed query heads): each row count stays
/// below kMaxRows, which leaves a block's rows past the end within 2^31.
/// gated_attention.launcher checks the same bound at run time.
constexpr int64_t kMaxRows = int64_t(1) << 30;
/// Split-KV decode: a paged launch whose tiles alone are fewer CTAs than
/// kSplitTargetCTAs (two per SM of a 132-SM H100/H200) splits each tile's
/// keys, each split at least kMinKeysPerSplit keys of the table's capacity,
/// at most kMaxSplits (a merge reads every split's partial).
constexpr int64_t kSplitTargetCTAs = 264;
constexpr int64_t kMinKeysPerSplit = 256;
constexpr int64_t kMaxSplits = 64;

/// The default tiles (warps, keys per block) of a kernel of `kind` for head
/// dims up to `d`.
std::pair<int64_t, int64_t> defaultTiles(FlashKernelKind kind, int64_t d,
                                         bool causal, bool paged);

/// `keyBlock`, or the next multiple of 16 at which each of the mma.sync
/// kernel's `warps` x 32 threads copies the same number of 16-byte chunks
/// of a K tile (`d`) and of a V tile (`dv`).
int64_t wholeCopies(int64_t warps, int64_t keyBlock, int64_t d, int64_t dv);

/// The checks below take `op` as FlashKernelConfig::get(op, kind) sees it
/// (a gated_attention.attention or paged_attention).

/// Warps per CTA and keys per block for `op`, where the options leave them
/// at 0.
std::pair<int64_t, int64_t> chooseTiles(Operation *op, FlashKernelKind kind,
                                        int64_t warps, int64_t keyBlock);

/// Why `op` cannot use the tensor-core kernel at all, or "". Such ops are
/// left for the SIMT lowering.
std::string unsupportedReason(Operation *op, FlashKernelKind kind);

/// Why the row strides of `op` do not suit the kernel, or "": the copies
/// need aligned rows (16 bytes for Q, K, V; 4 for the paired gate and
/// output accesses), and the wgmma kernel's TMA maps read [B, H, S, D].
std::string layoutError(Operation *op, FlashKernelKind kind);

/// Why the static sizes of `op` (a gated_attention.attention,
/// paged_attention or attention_backward) are beyond what the kernels
/// index (kMaxRows: Sq, Skv; T x the query heads packed per key head and
/// the table's capacity MB x P for a paged op; CUDA's grid: Hq and B), or
/// "". Dynamic sizes are checked when launched.
std::string sizeLimitError(Operation *op);

/// Why the tiles (`warps`, `keyBlock`) do not fit `op` on a chip with
/// `maxSharedMemory` bytes per CTA, or "": an error, since the user asked
/// for them.
std::string tileError(Operation *op, FlashKernelKind kind, int64_t warps,
                      int64_t keyBlock, int64_t maxSharedMemory);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_TILES_H
