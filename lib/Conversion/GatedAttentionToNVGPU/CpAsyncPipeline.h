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

#include "FlashKernelConfig.h"
#include "SharedTileLayout.h"

#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir::gated_attention::flash {

/// Where the rows of a paged slab are: row s is physical row
/// table[tableBase + s / pageSize] * pageSize + s % pageSize of its buffer
/// (slot s % P of the sequence's page s / P).
struct PageTable {
  Value table, tableBase;
  int64_t pageSize;
};

/// A [S, width] slab of a global buffer: the rows of one (batch, head),
/// row s at base + s * rowStride, or, through `pages`, at base +
/// physical(s) * rowStride. With rowGroup G > 1 (packed GQA heads: the
/// paged kernels, a dense decode step's) the slab's rows are
/// (row, head) pairs: its row p is row p / G at p % G heads (groupStride
/// elements each: packed rows' width, or a run-time head stride) from base.
struct GlobalSlab {
  Value buffer, base, rowStride;
  std::optional<PageTable> pages = std::nullopt;
  int64_t rowGroup = 1;
  Value groupStride = {};
  /// Compare the copies' rows with their limit in 32 bits (sequence
  /// lengths are below 2^31): a loop that streams the slab then carries a
  /// 32-bit limit and row bounds rather than 64-bit ones.
  bool narrowRows = false;
};

/// The row of `src`'s buffer that holds its row `row`: through the page
/// table, where `valid` holds (a row past the sequence may lie past its
/// table, or in garbage entries: its page id is not even loaded; 0 then).
Value pagedSourceRow(const KernelBuilder &kb, const GlobalSlab &src, Value row,
                     Value valid);

/// Where copy row `row` of `src` starts: (whether the row is below `limit`,
/// the element of `src`'s buffer). With rowGroup G > 1, `row` is packed:
/// row row / G of the slab, at (row % G) x groupStride. `physical(row,
/// valid)` is the buffer's row that holds the slab's row (the row itself,
/// or through the page table; anything when not valid); `column()` the
/// elements into the row, built last.
std::pair<Value, Value> slabElement(const KernelBuilder &kb,
                                    const GlobalSlab &src, Value row,
                                    Value limit,
                                    function_ref<Value(Value, Value)> physical,
                                    function_ref<Value()> column);

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

  /// Issues Q rows [rowBase, rowBase + rows) and key block `firstBlock`
  /// (0 when null; into buffer firstBlock % 2) as one group; returns it.
  Value loadFirst(GlobalSlab q, Value rowBase, Value numRows, GlobalSlab k,
                  GlobalSlab v, Value numKeys, Value firstBlock = {});
  /// Waits for every copy of `group` and makes it visible to the CTA.
  void waitAll(Value group);
  /// The start of iteration `block`, whose tiles are in buffer `buffer`:
  /// once every warp is done with block - 1, refills its buffer with block
  /// + 1 (zero-filled past the last block), then waits for block `block`.
  void advance(Value block, Value buffer, Value numBlocks, GlobalSlab k,
               GlobalSlab v, Value numKeys);

private:
  /// Issues the copies of rows [row0, row0 + rows) of `src` into
  /// `dst[prefix..., r, c]`; rows at or past `limit` are zero-filled
  /// without reading memory (nor, for paged slabs, the block table).
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
  /// The physical rows of one key block's paged copies, by (chunks per
  /// row, pass): K and V of one width share their table lookups.
  llvm::SmallDenseMap<std::pair<int64_t, int64_t>, Value> pagedRows;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_CP_ASYNC_PIPELINE_H
