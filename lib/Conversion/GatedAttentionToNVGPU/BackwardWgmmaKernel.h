//===- BackwardWgmmaKernel.h - the sm_90a backward kernels' frame -*- C++ -*-//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// What the backward's two wgmma kernels (dK/dV: BackwardKeyValueWgmma.cpp,
// dQ: BackwardQueryWgmma.cpp) share, in the warp-specialized shape of the
// forward's sm_90a kernel: two tiles of the CTA's 64 rows stay resident in
// shared memory (K and V for dK/dV, Q and dY for dQ), and blocks of two
// streamed tiles (Q and dY, or K and V) pass through a two-stage ring with
// `full` and `empty` mbarriers (phases as in TmaPipeline.h, counted from
// the first block streamed). K and V land by TMA (one thread: one arrival
// with the pair's bytes, then a box per column atom; the maps' S dim ends
// the sequence, zero-filled past it): resident in the dK/dV kernel, issued
// by the thread that initializes the barriers, streamed in the dQ kernel
// by warpgroup 0, the producer. Q and dY the producer copies by cp.async
// rows (copySwizzledRows: every producer thread arrives once its rows
// landed): the dK/dV kernel's packed GQA rows interleave the group's
// heads, which no TMA box follows (the dQ kernel's are one head's, but
// resident: copied once). The consumer warpgroups multiply
// resident x streamed^T (SS wgmma) and accumulate into the gradient with
// the streamed tile as the N-major B operand of a register-A wgmma.
// BackwardTmaLayout (SharedMemoryLayout.h) places the tiles.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_BACKWARD_WGMMA_KERNEL_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_BACKWARD_WGMMA_KERNEL_H

#include "BackwardKernels.h"
#include "SharedMemoryLayout.h"
#include "WgmmaAtom.h"

#include <array>

namespace mlir::gated_attention::flash {

class BackwardWgmmaKernel : public KernelBuilder {
protected:
  BackwardWgmmaKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg), layout(BackwardTmaLayout::get(cfg)) {}

  /// The entry block: the arguments, the thread, its uniform warpgroup and
  /// the atom.
  void begin(gpu::GPUFuncOp func);
  /// Where the producer copies a pair of tiles from: K and V by TMA (the
  /// `k` and `v` maps at slab batch x Hkv + head `keyValueSlab`), the
  /// others by rows of `rows`, zero past `limit`.
  struct TileSources {
    std::array<GlobalSlab, 2> rows;
    Value limit, keyValueSlab;
  };
  /// Whether K and V are the resident tiles (the dK/dV kernel) or the
  /// streamed ones (the dQ kernel): the pair that TMA copies.
  bool keyValueResident() const {
    return cfg.role == KernelRole::BackwardKeyValue;
  }
  /// Initializes the barriers and copies the tiles: the resident ones
  /// (rows [row0, row0 + cfg.queryBlock()) of `resident`; TMA's from the
  /// initializing thread, row copies from warpgroup 0 after its
  /// setmaxnreg), then in warpgroup 0 every block j of the streamed tiles
  /// (rows from j x cfg.keyBlock of `streamed`) once its stage is free.
  /// Runs `consume(consumer)` in the other warpgroups, each after its
  /// setmaxnreg; then the return. `firstBlock` and `numBlocks` must be set.
  void runRoles(const TileSources &resident, Value row0,
                const TileSources &streamed, function_ref<void(Value)> consume);
  /// Consumer: the lane layout of threads counted from the first
  /// consumer's; waits for the resident tiles.
  void startConsumer();
  /// Consumer: waits for block `block`, issues resident[i] x streamed[i]^T
  /// for i = 0, 1 (SS wgmma, K-major both) and returns both accumulators'
  /// registers once complete.
  std::array<SmallVector<Value>, 2> multiplyBlock(Value block);
  /// The N-major B descriptor of streamed tile `i` of block `block`,
  /// starting at consumer `consumer`'s 1 / cfg.columnSplit of its `width`
  /// columns.
  Value streamedColumns(int i, Value block, Value consumer, int64_t width);
  /// Consumer: every warp's wgmmas are done with block `block`'s stage.
  void release(Value block);

  const FlashKernelConfig &cfg;
  BackwardTmaLayout layout;
  std::optional<KernelArguments> args;
  std::optional<WgmmaAtom> atom;
  LaneLayout lanes;
  Value thread, warpgroup;
  /// The blocks streamed: [firstBlock, numBlocks).
  Value firstBlock, numBlocks;

private:
  /// !llvm.ptr<3> at byte `offset` (+ stage x stride) of shared memory.
  Value pointer(int64_t offset, Value stage = {}, int64_t stride = 0);
  Value offsetBy(Value tile, Value bytes);
  Value residentTile(int i) { return pointer(layout.resident[i]); }
  Value streamedTile(int i, Value stage) {
    return pointer(layout.streamed[i], stage, layout.streamedStageBytes[i]);
  }
  /// The `full` or `empty` barrier of `stage`.
  Value barrier(bool full, Value stage);
  /// Block `block`'s stage, and the parity of its use of the stage.
  Value stageOf(Value block);
  Value phaseOf(Value block);
  void wait(Value barrier, Value parity);
  /// Waits on a full barrier; with row copies (`byTma` false) then orders
  /// their (generic proxy) writes before wgmma's (async proxy) reads.
  void waitLanded(Value barrier, Value parity, bool byTma);
  /// Copies a pair of tiles, `rows` rows from `row0`, into `tiles`,
  /// arriving on `bar`: TMA (from the calling thread) or row copies (from
  /// every producer thread; `bases` their buffers' global pointers).
  void copyPair(const TileSources &src, ArrayRef<Value> bases, bool byTma,
                Value row0, std::array<Value, 2> tiles, int64_t rows,
                Value bar);
  SmallVector<Value, 2> rowBases(const TileSources &src, bool byTma);
  void copyResident(const TileSources &resident, Value row0);
  void produceStreamed(const TileSources &streamed);
  /// The arrivals a full barrier of a pair of tiles counts.
  int64_t arrivals(bool byTma) const { return byTma ? 1 : 2 * 128; }
  Value i32(Value index);
  Value i32(int64_t value);
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_BACKWARD_WGMMA_KERNEL_H
