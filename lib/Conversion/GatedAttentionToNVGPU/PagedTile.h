//===- PagedTile.h - what a CTA of a paged kernel works on ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The paged kernels (the mma.sync one, its split form, the sm_90a one) take
// the same arguments (KernelInterface.h) and see them the same way: the CTA's
// tile of one sequence's packed queries (scheduleVarlenTile), the `rowGroup`
// query heads of one K/V head packed into its rows, Q rows by token, K/V rows
// through the sequence's block table, the gate and the output by token again.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_PAGED_TILE_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_PAGED_TILE_H

#include "CpAsyncPipeline.h"
#include "Epilogue.h"
#include "KernelInterface.h"
#include "TileScheduler.h"

namespace mlir::gated_attention::flash {

class PagedTile {
public:
  /// This CTA's tile; everything below must run under its `active` (a
  /// uniform condition: barriers inside stay CTA-wide).
  static VarlenTile schedule(const KernelBuilder &kb,
                             const FlashKernelConfig &cfg, Block &entry);

  PagedTile(const KernelBuilder &kb, const FlashKernelConfig &cfg, Block &entry,
            const VarlenTile &varlen);

  /// The tile's first packed row: (query, head) pairs, rowGroup per query.
  Value packedRowBase() const;
  /// The sequence's first token, loaded again where needed: at D = 256 no
  /// register is left to keep it through the key loop.
  Value reloadFirstRow() const;
  /// The gated epilogue's packed gate and output rows.
  EpilogueOperands gatedEpilogue() const;

  VarlenTile varlen;
  /// The CTA's first query head, and the sequence's keys.
  Value head, numKeys;
  /// Packed Q rows (row p: token p / G, head p % G of the CTA's first), and
  /// the K/V slabs of the heads' K/V head through the block table.
  GlobalSlab query, key, value;

private:
  /// Packed token rows of `buffer` from token `firstRow`: row p of the
  /// tile's heads is token firstRow + p / G at head head + p % G (or, not
  /// `perHead`, every head reading head 0: a gate shared by all heads).
  GlobalSlab packed(Value buffer, Value firstRow, int64_t width, StringRef name,
                    bool perHead = true) const;

  const KernelBuilder &kb;
  const FlashKernelConfig &cfg;
  KernelArguments args;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_PAGED_TILE_H
