//===- FlashKernelConfig.h - what a flash kernel depends on -----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The configuration of one tensor-core flash kernel: everything about a
// kernel that follows from its op and its tiles. Its tiles are chosen and
// checked in KernelTiles.h, its arguments, grid and shared memory follow
// from it in KernelInterface.h.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_CONFIG_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_CONFIG_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace mlir::gated_attention::flash {

/// The operands with row strides, in FlashKernelConfig::rowStrides order.
inline constexpr StringLiteral kOperandNames[] = {"q", "k", "v", "gate", "out"};

/// The two kernels: FlashAttention-2's on mma.sync (sm_80 and later), and
/// the Hopper one on wgmma + TMA (sm_90a only).
enum class FlashKernelKind { MmaSync, Wgmma };

/// The kernels of an op: one that writes the gated output (Direct), or, for
/// split-KV decode (a paged op's, or a dense op's with Sq = 1), one whose
/// CTAs each take a part of the keys and write f32 partials (Split) and the
/// SIMT kernel that combines them and applies the gate once (Merge,
/// MergeKernel.cpp).
/// The backward op's three kernels (BackwardKernels.h): the preprocessing
/// (BackwardPreprocess: D, dO and dG, SIMT), dK and dV per key block
/// (BackwardKeyValue) and dQ per query block (BackwardQuery).
enum class KernelRole {
  Direct,
  Split,
  Merge,
  BackwardPreprocess,
  BackwardKeyValue,
  BackwardQuery
};

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
  /// The op returns its log-sum-exp (AttentionOp::hasLse): the direct
  /// kernel, or split-KV's merge, writes one f32 per query row into an
  /// "lse" argument. (The split kernel writes its partials' anyway.)
  bool lse = false;
  /// The dense wgmma forward kernel loops over its tiles
  /// (NVGPUKernelOptions::persistent; KernelInterface::persistent()).
  bool persistent = false;
  KernelRole role = KernelRole::Direct;
  /// Warps that share each 16-row tile, each accumulating its part of the
  /// columns (the backward's kernels above D = 128, whose accumulators do
  /// not fit one warp's registers); 1 elsewhere.
  int64_t columnSplit = 1;

  /// The configuration of `op`, a gated_attention.attention or
  /// paged_attention, with tiles (`warps`, `keyBlock`) (0: not chosen yet).
  static FlashKernelConfig get(Operation *op, FlashKernelKind kind,
                               int64_t warps = 0, int64_t keyBlock = 0);

  bool isWgmma() const { return kind == FlashKernelKind::Wgmma; }
  bool isPaged() const { return pageSize != 0; }
  bool isSplit() const { return role == KernelRole::Split; }
  bool isMerge() const { return role == KernelRole::Merge; }
  bool isBackward() const {
    return role == KernelRole::BackwardPreprocess ||
           role == KernelRole::BackwardKeyValue ||
           role == KernelRole::BackwardQuery;
  }
  /// The configuration of a gated_attention.attention_backward's kernel
  /// `role` (its tiles: BackwardKernels.h); with `kind` Wgmma the dK/dV
  /// kernel is the sm_90a one.
  static FlashKernelConfig
  getBackward(AttentionBackwardOp op, KernelRole role,
              FlashKernelKind kind = FlashKernelKind::MmaSync);
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
  /// tile of its warpgroup for wgmma), or, with columnSplit warps to a row
  /// tile, 1 / columnSplit of its columns.
  int64_t queryBlock() const { return 16 * warps / columnSplit; }
  /// The wgmma kernel's consumer warpgroups, 64 query rows each.
  int64_t consumerWarpgroups() const { return warps / 4; }
  /// The registers per thread that setmaxnreg gives the producer and the
  /// consumer warpgroups (multiples of 8 in [24, 256]): the producer needs
  /// few, the consumers' accumulators take the rest. setmaxnreg draws on
  /// the CTA's own pool, what it was launched with (PTX ISA, setmaxnreg),
  /// not the whole 64K file: 384 threads launch with 168 registers each,
  /// so 24 + 2 x 240 = 3 x 168 is all two consumer warpgroups can have; a
  /// 32-register producer beside them left an increase waiting forever
  /// (the D = 256 dK/dV kernel hung on an H200). That kernel's producer
  /// computes packed GQA row addresses, which spill in 24: it takes 40 and
  /// its consumers 232 (40 + 2 x 232 = 3 x 168). fitsRegisterPool().
  int64_t producerRegisters() const {
    if (consumerWarpgroups() == 1)
      return 56;
    return role == KernelRole::BackwardKeyValue ? 40 : 24;
  }
  int64_t consumerRegisters() const {
    if (consumerWarpgroups() == 1)
      return 256;
    return role == KernelRole::BackwardKeyValue ? 232 : 240;
  }
  /// Whether the setmaxnreg split fits the pool of a CTA of threads()
  /// launched with the registers ptxas gives one CTA per SM (the 64K file
  /// split over the threads in units of 8, at most 255, allocated as 256).
  bool fitsRegisterPool() const {
    int64_t entry = std::min<int64_t>(255, 65536 / threads() / 8 * 8);
    int64_t pool = threads() * ((entry + 7) / 8 * 8);
    return 128 * (producerRegisters() +
                  consumerWarpgroups() * consumerRegisters()) <=
           pool;
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
  /// The row stride of "q", "k", "v", "gate" or "out".
  int64_t rowStride(StringRef operand) const;
  /// The bytes that the start of each row of `operand` must be aligned to.
  int64_t rowAlignment(StringRef operand) const;
  /// Whether the sm_90a kernel's epilogue writes its output through shared
  /// memory (Epilogue.h): a dense kernel of one head per row, Dv = 256 (its
  /// output rows fit in the consumer's freed Q rows when D >= Dv),
  /// contiguous rows starting 16-byte aligned.
  bool stagesOutput() const;
  /// Whether it also reads an elementwise gate through them: one bulk copy
  /// a warp of rows back to back, then ldmatrix.
  bool stagesGate() const {
    return stagesOutput() && hasGate && !headwiseGate() &&
           rowStride("gate") == valueHeadDim;
  }

  std::string typeName() const;
  /// A readable kernel name; `uniqueKey` tells kernels of one name apart.
  std::string baseName() const;
  std::string uniqueKey() const;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FLASH_KERNEL_CONFIG_H
