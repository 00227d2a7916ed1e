//===- CpAsyncPipeline.h - the sm_80 kernel's copy pipeline -----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The copy pipeline of the mma.sync kernel: Q and K/V tiles staged in
// dynamic shared memory by cp.async (16-byte chunks, swizzled), K and V
// double buffered so that the copy of block j + 1 is in flight while block
// j is multiplied. Rows past the end of a sequence are zero-filled without
// reading memory.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_CP_ASYNC_PIPELINE_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_CP_ASYNC_PIPELINE_H

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashKernelConfig.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/SharedTileLayout.h"

namespace mlir::gated_attention::flash {

/// A [S, width] slab of a global buffer: the rows of one (batch, head),
/// row s at base + s * rowStride.
struct GlobalSlab {
  Value buffer, base, rowStride;
};

class CpAsyncPipeline : public KernelBuilder {
public:
  CpAsyncPipeline(OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
                  Value thread, ChunkSwizzle swizzle);

  /// Views of dynamic shared memory: Q [rows, D], then K [2, keyBlock, D]
  /// and V [2, keyBlock, Dv].
  void allocateTiles();
  Value queryTile() const { return qTile; }
  Value keyTiles() const { return kTiles; }
  Value valueTiles() const { return vTiles; }

  /// Issues Q rows [rowBase, rowBase + rows) and key block 0 (into buffer
  /// 0) as one group; returns it.
  Value loadFirst(GlobalSlab q, Value rowBase, Value numRows, GlobalSlab k,
                  GlobalSlab v, Value numKeys);
  /// Waits for every copy of `group` and makes it visible to the CTA.
  void waitAll(Value group);
  /// The start of iteration `block`, whose tiles are in buffer `buffer`:
  /// once every warp is done with block - 1, refills its buffer with block
  /// + 1 (zero-filled past the last block), then waits for block `block`.
  void advance(Value block, Value buffer, Value numBlocks, GlobalSlab k,
               GlobalSlab v, Value numKeys);

private:
  /// Issues the copies of rows [row0, row0 + rows) of `src` into
  /// `dst[prefix..., r, c]`; rows at or past `limit` are zero-filled.
  void copyTile(GlobalSlab src, Value row0, Value limit, Value dst,
                ValueRange prefix, int64_t rows, int64_t width,
                SmallVectorImpl<Value> &tokens);
  void copyKeyBlock(Value block, Value buffer, Value limit, GlobalSlab k,
                    GlobalSlab v, SmallVectorImpl<Value> &tokens);
  Value commit(ValueRange tokens);

  const FlashKernelConfig &cfg;
  Value thread;
  ChunkSwizzle swizzle;
  Value qTile, kTiles, vTiles;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_CP_ASYNC_PIPELINE_H
