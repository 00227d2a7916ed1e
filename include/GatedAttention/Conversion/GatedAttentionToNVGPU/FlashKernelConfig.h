//===- FlashKernelConfig.h - what a flash kernel depends on -----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The configuration of one tensor-core flash kernel, the choice and the
// checks of its tiles, and its launch description: everything about a
// kernel that is decided before a single op of it is built.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_CONFIG_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_CONFIG_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace mlir::gated_attention::flash {

/// Upper bounds of the tile options: 8 warps of 255-register threads fill
/// an SM's 64K registers; 1024 keys per block is beyond any chip's shared
/// memory at the smallest head dim. CUDA caps grid y and z at 65535.
constexpr int64_t kMaxWarps = 8;
constexpr int64_t kMaxKeyBlock = 1024;
constexpr int64_t kMaxGridYZ = 65535;
/// Split-KV decode: a paged launch whose tiles alone are fewer CTAs than
/// kSplitTargetCTAs (two per SM of a 132-SM H100/H200) splits each tile's
/// keys, each split at least kMinKeysPerSplit keys of the table's capacity,
/// at most kMaxSplits (a merge reads every split's partial).
constexpr int64_t kSplitTargetCTAs = 264;
constexpr int64_t kMinKeysPerSplit = 256;
constexpr int64_t kMaxSplits = 64;

/// The two kernels: FlashAttention-2's on mma.sync (sm_80 and later), and
/// the Hopper one on wgmma + TMA (sm_90a only).
enum class FlashKernelKind { MmaSync, Wgmma };

/// The kernels of an op: one that writes the gated output (Direct), or, for
/// split-KV decode (a paged op's, or a dense op's with Sq = 1), one whose
/// CTAs each take a part of the keys and write f32 partials (Split) and the
/// SIMT kernel that combines them and applies the gate once (Merge,
/// MergeKernel.cpp).
enum class KernelRole { Direct, Split, Merge };

/// Everything the kernel depends on. Batch and sequence lengths are not part
/// of it: they are kernel arguments, so ops that differ only in them share
/// one kernel.
struct FlashKernelConfig {
  FlashKernelKind kind = FlashKernelKind::MmaSync;
  Type elementType;
  int64_t numQueryHeads, numKeyValueHeads, numGateHeads, gateWidth;
  int64_t headDim, valueHeadDim;
  bool causal;
  double scale;
  Attribute gate;
  CombineKind combine;
  int64_t warps, keyBlock;
  /// Whether the op has a gate; without one the epilogue is O / l.
  bool hasGate;
  /// Elements between rows of q, k, v, gate and out
  /// (AttentionOp::getRowStrides): compile-time constants, because at
  /// D = 256 the kernels have no register left to hold them.
  SmallVector<int64_t, 5> rowStrides;
  /// Tokens per page of the paged kernel's K/V caches (PagedAttentionOp);
  /// 0 for the dense kernel.
  int64_t pageSize = 0;
  /// A dense op of static Sq = 1 (a decode step): its CTAs pack heads.
  bool singleQuery = false;
  KernelRole role = KernelRole::Direct;

  /// The configuration of `op`, a gated_attention.attention or
  /// paged_attention, with tiles (`warps`, `keyBlock`) (0: not chosen yet).
  static FlashKernelConfig get(Operation *op, FlashKernelKind kind,
                               int64_t warps = 0, int64_t keyBlock = 0);

  bool isWgmma() const { return kind == FlashKernelKind::Wgmma; }
  bool isPaged() const { return pageSize != 0; }
  bool isSplit() const { return role == KernelRole::Split; }
  bool isMerge() const { return role == KernelRole::Merge; }
  /// This configuration's kernel `role` (one of an op's three kernels).
  /// The split kernel carries its partials through the key loop: above
  /// D = 128 it takes 16-key blocks (32 spill at D = 256;
  /// ptxas-decode.test), as the paged kernel does, or as few more as make
  /// its copies whole (32 at D = 192). Split-KV decode reads memory more than
  /// it multiplies, and the sm_90a kernel has no split form: a wgmma
  /// configuration's split and merge kernels are mma.sync ones, with that
  /// kernel's default tiles.
  FlashKernelConfig withRole(KernelRole role) const;
  /// Whether the sm_90a kernel's producer warpgroup copies Q, K and V row by
  /// row (cp.async through the block table: the paged kernel; pages make no
  /// TMA box) rather than issuing TMA boxes.
  bool copiesRows() const { return isWgmma() && isPaged(); }

  /// `warps` are the warps that compute; the wgmma kernel adds a producer
  /// warpgroup that only issues copies.
  int64_t threads() const {
    // The merge kernel: a thread per column pair of a (token, head) row.
    if (isMerge())
      return valueHeadDim / 2;
    return 32 * warps + (isWgmma() ? 128 : 0);
  }
  /// Each warp owns the 16 rows of one m16 accumulator tile (of the m64
  /// tile of its warpgroup for wgmma).
  int64_t queryBlock() const { return 16 * warps; }
  /// The wgmma kernel's consumer warpgroups, 64 query rows each.
  int64_t consumerWarpgroups() const { return warps / 4; }
  /// The registers per thread that setmaxnreg gives the producer and the
  /// consumer warpgroups (multiples of 8 in [24, 256]): the producer needs
  /// few, the consumers' accumulators take the rest of the 64K-register
  /// file, 128 x (producer + consumers x consumer) <= 65536.
  int64_t producerRegisters() const {
    return consumerWarpgroups() == 1 ? 56 : 24;
  }
  int64_t consumerRegisters() const {
    return consumerWarpgroups() == 1 ? 256 : 240;
  }
  /// Whether the two consumer warpgroups take turns issuing their GEMMs
  /// (Pingpong.h): FlashAttention-3's choice for head dims up to 128; at 256
  /// the GEMMs are long enough to hide the softmax on their own.
  bool pingpong() const {
    return isWgmma() && consumerWarpgroups() == 2 &&
           std::max(headDim, valueHeadDim) <= 128;
  }
  int64_t elementBytes() const { return 2; }
  int64_t queryTileBytes() const {
    return queryBlock() * headDim * elementBytes();
  }
  int64_t keyTileBytes() const { return keyBlock * headDim * elementBytes(); }
  int64_t valueTileBytes() const {
    return keyBlock * valueHeadDim * elementBytes();
  }
  /// Q, then two K tiles, then two V tiles (and the mbarriers for wgmma).
  int64_t sharedMemoryBytes() const;
  /// Q fragments stay in registers for D <= 128; at D = 256 they would take
  /// 64 of the 255 registers that the O accumulators already crowd, so they
  /// are re-read from shared memory for every key block.
  bool queryInRegisters() const { return headDim <= 128; }
  bool headwiseGate() const { return hasGate && gateWidth == 1; }
  /// Query heads per key/value head.
  int64_t groupSize() const { return numQueryHeads / numKeyValueHeads; }
  /// The query heads of one K/V head whose rows one CTA packs into its MMA
  /// rows (row p: query p / G of head p % G), so that a K/V tile is loaded
  /// once for them (decode has one query per sequence: without packing it
  /// would fill 1 row of 16): the paged kernels and the mma.sync kernels of
  /// a dense decode step (Sq = 1, direct and split); 1 otherwise.
  int64_t rowGroup() const {
    bool packs = isPaged() || (singleQuery && !isMerge() && !isWgmma());
    return packs ? std::gcd(groupSize(), queryBlock()) : 1;
  }
  /// The queries of a sequence that one CTA covers.
  int64_t queriesPerBlock() const { return queryBlock() / rowGroup(); }

  /// The buffers the kernel reads and writes through strides, grouped by
  /// the (batch, head) strides they share, in the order of the kernel's
  /// stride arguments: q, k and v, gate, out for mma.sync (k and v share
  /// theirs when D = Dv: at D = 256 a second K/V base would not fit in the
  /// registers; apart otherwise); gate, out for wgmma (its Q, K and V TMA
  /// maps carry their own strides).
  SmallVector<SmallVector<StringRef, 2>> strideGroups() const;
  /// Whether `operand` is read or written through strides.
  bool isStrided(StringRef operand) const;
  /// Each group's (batch, head) strides, in elements, are index arguments
  /// after (Sq, Skv); a buffer's row stride is `rowStride` and the elements
  /// of a row are contiguous.
  static constexpr int64_t kStridesPerOperand = 2;
  /// The row stride of "q", "k", "v", "gate" or "out".
  int64_t rowStride(StringRef operand) const;
  /// The kernel's arguments before the strides: q, k, v, gate, out, Sq, Skv.
  static constexpr unsigned kFixedArguments = 7;
  /// The paged kernel's arguments: q, k, v, gate, out, then block_table,
  /// seq_lens, cu_seqlens_q (memref<?xi32>), B and MB (index); no strides
  /// (its buffers are packed, their row strides the row widths).
  static constexpr unsigned kPagedArguments = 10;
  /// The split kernels' further arguments (after the paged kernel's, or
  /// after the dense kernel's strides): partial O and LSE (memref<?xf32>:
  /// [splits, T, Hq, Dv] and [splits, T, Hq], T the query tokens: B for a
  /// dense decode step), splits and T (index). The merge kernel's: gate,
  /// out, partial O and LSE, T, splits.

  std::string typeName() const;
  /// A readable kernel name; `uniqueKey` tells kernels of one name apart.
  std::string baseName() const;
  std::string uniqueKey() const;
  /// The launch description of the kernel `name`, as JSON: what a runner
  /// outside MLIR needs to call the PTX.
  std::string describeLaunch(StringRef name) const;
};

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

/// Why the tiles (`warps`, `keyBlock`) do not fit `op` on a chip with
/// `maxSharedMemory` bytes per CTA, or "": an error, since the user asked
/// for them.
std::string tileError(Operation *op, FlashKernelKind kind, int64_t warps,
                      int64_t keyBlock, int64_t maxSharedMemory);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_CONFIG_H
