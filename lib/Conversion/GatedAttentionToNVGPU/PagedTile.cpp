//===- PagedTile.cpp - what a CTA of a paged kernel works on --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "PagedTile.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

VarlenTile PagedTile::schedule(const KernelBuilder &kb,
                               const FlashKernelConfig &cfg, Block &entry) {
  KernelArguments args(cfg, entry);
  return scheduleVarlenTile(kb, cfg.queriesPerBlock(), args["cu_seqlens_q"],
                            args["B"]);
}

PagedTile::PagedTile(const KernelBuilder &kb, const FlashKernelConfig &cfg,
                     Block &entry, const VarlenTile &varlen)
    : varlen(varlen), kb(kb), cfg(cfg), args(cfg, entry) {
  int64_t group = cfg.rowGroup();
  Value batch = varlen.tile.batch;
  // The CTA's `group` heads share one K/V head.
  head = group > 1 ? kb.mul(varlen.tile.head, group) : varlen.tile.head;
  numKeys = kb.loadIndex(args["seq_lens"], batch);
  Value kvHead = kb.div(head, cfg.groupSize());
  Value tableBase = kb.mul(batch, args["MB"]);
  PageTable pages{args["block_table"], tableBase, cfg.pageSize};
  Value keyBase = kb.mul(kvHead, cfg.headDim);
  key = GlobalSlab{args["k"], keyBase, kb.idx(cfg.rowStride("k")), pages};
  Value valueBase = kb.mul(kvHead, cfg.valueHeadDim);
  value = GlobalSlab{args["v"], valueBase, kb.idx(cfg.rowStride("v")), pages};
  query = packed(args["q"], varlen.firstRow, cfg.headDim, "q");
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
  return kb.loadIndex(args["cu_seqlens_q"], varlen.tile.batch);
}

EpilogueOperands PagedTile::gatedEpilogue() const {
  Value firstRow = reloadFirstRow();
  GlobalSlab gate = packed(args["gate"], firstRow, cfg.gateWidth, "gate",
                           cfg.numGateHeads != 1);
  GlobalSlab out = packed(args["out"], firstRow, cfg.valueHeadDim, "out");
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
