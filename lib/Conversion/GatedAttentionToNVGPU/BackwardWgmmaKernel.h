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
// the first block streamed). Warpgroup 0, the producer, copies them by
// cp.async rows (copySwizzledRows); the consumer warpgroups multiply
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
  /// Initializes the barriers, then runs `produce()` in warpgroup 0 and
  /// `consume(consumer)` in the others, each after its setmaxnreg; then
  /// the return. `firstBlock` and `numBlocks` must be set.
  void runRoles(function_ref<void()> produce,
                function_ref<void(Value)> consume);
  /// Producer: the resident tiles (rows [row0, row0 + cfg.queryBlock()) of
  /// `resident`, zero past `residentLimit`), then every block j of the
  /// streamed tiles (rows from j x cfg.keyBlock, zero past
  /// `streamedLimit`) once its stage is free.
  void produceTiles(std::array<GlobalSlab, 2> resident, Value row0,
                    Value residentLimit, std::array<GlobalSlab, 2> streamed,
                    Value streamedLimit);
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
  /// Waits on a barrier that row copies arrive on, then orders their
  /// (generic proxy) writes before wgmma's (async proxy) reads.
  void waitLanded(Value barrier, Value parity);
  Value i32(Value index);
  Value i32(int64_t value);
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_BACKWARD_WGMMA_KERNEL_H
