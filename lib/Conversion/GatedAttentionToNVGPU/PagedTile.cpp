//===- PagedTile.cpp - what a CTA of a paged kernel works on --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/PagedTile.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

// The arguments: q, k, v, gate, out, block_table, seq_lens, cu_seqlens_q,
// B, MB.
enum PagedArgument : unsigned {
  kQuery,
  kKeyCache,
  kValueCache,
  kGate,
  kOut,
  kTable,
  kSeqLens,
  kCuSeqlens,
  kNumSeqs,
  kTableWidth
};

VarlenTile PagedTile::schedule(const KernelBuilder &kb,
                               const FlashKernelConfig &cfg, Block &entry) {
  return scheduleVarlenTile(kb, cfg.queriesPerBlock(),
                            entry.getArgument(kCuSeqlens),
                            entry.getArgument(kNumSeqs));
}

PagedTile::PagedTile(const KernelBuilder &kb, const FlashKernelConfig &cfg,
                     Block &entry, const VarlenTile &varlen)
    : varlen(varlen), kb(kb), cfg(cfg), entry(entry) {
  int64_t group = cfg.rowGroup();
  Value batch = varlen.tile.batch;
  // The CTA's `group` heads share one K/V head.
  head = group > 1 ? kb.mul(varlen.tile.head, group) : varlen.tile.head;
  numKeys = kb.loadIndex(entry.getArgument(kSeqLens), batch);
  Value kvHead = kb.div(head, cfg.groupSize());
  Value tableBase = kb.mul(batch, entry.getArgument(kTableWidth));
  PageTable pages{entry.getArgument(kTable), tableBase, cfg.pageSize};
  Value keyBase = kb.mul(kvHead, cfg.headDim);
  key = GlobalSlab{entry.getArgument(kKeyCache), keyBase,
                   kb.idx(cfg.rowStride("k")), pages};
  Value valueBase = kb.mul(kvHead, cfg.valueHeadDim);
  value = GlobalSlab{entry.getArgument(kValueCache), valueBase,
                     kb.idx(cfg.rowStride("v")), pages};
  query = packed(entry.getArgument(kQuery), varlen.firstRow, cfg.headDim, "q");
}

GlobalSlab PagedTile::packed(Value buffer, Value firstRow, int64_t width,
                             StringRef name, bool perHead) const {
  int64_t rowStride = cfg.rowStride(name);
  Value base = kb.mul(firstRow, rowStride);
  if (perHead)
    base = kb.add(base, kb.mul(head, width));
  return GlobalSlab{
      buffer,       base,           kb.idx(rowStride),
      std::nullopt, cfg.rowGroup(), perHead ? kb.idx(width) : Value()};
}

Value PagedTile::packedRowBase() const {
  Value rowBase = varlen.tile.rowBase;
  return cfg.rowGroup() > 1 ? kb.mul(rowBase, cfg.rowGroup()) : rowBase;
}

Value PagedTile::reloadFirstRow() const {
  return kb.loadIndex(entry.getArgument(kCuSeqlens), varlen.tile.batch);
}

EpilogueOperands PagedTile::gatedEpilogue() const {
  Value firstRow = reloadFirstRow();
  GlobalSlab gate = packed(entry.getArgument(kGate), firstRow, cfg.gateWidth,
                           "gate", cfg.numGateHeads != 1);
  GlobalSlab out =
      packed(entry.getArgument(kOut), firstRow, cfg.valueHeadDim, "out");
  return EpilogueOperands{gate.buffer,
                          out.buffer,
                          gate.base,
                          out.base,
                          varlen.numRows,
                          gate.rowStride,
                          out.rowStride,
                          cfg.rowGroup(),
                          cfg.numGateHeads != 1 ? kb.idx(cfg.gateWidth)
                                                : Value(),
                          kb.idx(cfg.valueHeadDim)};
}
