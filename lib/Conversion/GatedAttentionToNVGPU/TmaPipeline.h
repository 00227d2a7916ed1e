//===- TmaPipeline.h - the sm_90a kernel's copy pipeline --------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The copy pipeline of the wgmma kernel: Q and K/V tiles land in shared
// memory by TMA (cp.async.bulk.tensor, 128B swizzle, one 64-column box per
// column atom; see WgmmaAtom.h for the layout), each load completing on an
// mbarrier with the transaction count of its bytes. K and V go through
// rings of two stages, block j in stage j % 2, the (j / 2)-th use of the
// stage; K and V have barriers of their own, since the consumers are done
// with K_j a block before V_j (WgmmaFlashKernel.cpp). Each stage of each
// has two barriers: `full` (one arrival, the producer's, plus the bytes of
// the copy), which the consumers wait on with parity (j / 2) % 2, and
// `empty` (one arrival per consumer warp once its wgmmas have read the
// tile), which the producer waits on with the opposite parity before
// refilling it: a fresh barrier counts as having completed the phase before
// its first, so blocks 0 and 1 do not wait. The dense kernel loops over
// tiles (TileScheduler.h: TileSequence), and its pipeline runs on across
// them: "block" j below is the running count of key blocks, the earlier
// tiles' and then the tile's own. Q has a `full` barrier, waited on with
// the tile's parity (its count of tiles mod 2), and in the dense kernel an
// `empty` one: each consumer warp arrives once nothing of its tile reads
// the Q tile any longer (its last Q K^T, and the staged epilogue that
// reuses Q's rows), and the producer waits for it before loading the next
// tile's Q.
// TMA zero-fills rows past the end of a (batch, head)'s sequence: the maps
// are 3-D (D, S, B x H), so a tile never reads another head's rows.
//
// The paged kernel's rows come through a block table (and its Q rows are
// packed (query, head) pairs), which no TMA box follows: there the whole
// producer warpgroup copies them in 16-byte cp.async chunks into the same
// swizzled layout, rows at or past the sequence's end zero-filled without
// being read (so a NaN in a page's unused slots never reaches P V), and
// each thread's cp.async.mbarrier.arrive.noinc arrives on the full barrier
// once its copies have landed: full barriers count 128 arrivals and no
// bytes. FlashAttention-3 reads paged K/V the same way when a page is not a
// whole number of key blocks. The consumers then fence the generic proxy's
// writes (cp.async) against wgmma's reads (the async proxy).
//
// All of shared memory is one extern array aligned to 1024 bytes (the
// swizzle atom), with the mbarriers inside it. MLIR 22 lowers
// gpu.dynamic_shared_memory to an internal zero-length global aligned to
// 16 bytes, which LLVM's NVPTX backend prints as a static one-byte
// `.shared .align 16` variable, not as the `.extern .shared` array of
// unspecified size that the PTX ISA (and CUDA's `extern __shared__`) uses
// for memory sized at launch: buffers carved from it would not be
// 1024-aligned and could overlap other shared variables.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TMA_PIPELINE_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TMA_PIPELINE_H

#include "CpAsyncPipeline.h"
#include "FlashKernelConfig.h"
#include "KernelBuilder.h"
#include "SharedMemoryLayout.h"

#include <optional>

namespace mlir::gpu {
class GPUModuleOp;
} // namespace mlir::gpu

namespace mlir::gated_attention::flash {

/// The K and the V tiles of a key block, each with a ring and barriers.
enum class KeyValue { Key, Value };

/// What TMA copies: the tensor maps of Q, K and V (pointers to them in
/// global memory), and the tile's Q slab (batch x Hq + head) and K/V slab
/// (batch x Hkv + kv head).
struct TmaBoxes {
  Value queryMap, keyMap, valueMap, querySlab, keySlab;
};

/// What the producer warpgroup copies row by row: the Q, K and V slabs
/// (GlobalSlab: pages, packed heads), the sequence's queries and keys (rows
/// at or past them are zero-filled) and the producer thread (0..127).
struct RowCopies {
  GlobalSlab query, key, value;
  Value numQueries, numKeys, thread;
};

/// `buffer`'s first element as an !llvm.ptr<1>.
Value globalBufferPointer(const KernelBuilder &kb, Value buffer);

/// Copies rows [row0, row0 + numRows) of `src` (its buffer's first element
/// at the global pointer `base`) into the [numRows, width] column-atom tile
/// at `dst` (WgmmaAtom.h) in 16-byte cp.async chunks, rows at or past
/// `limit` zero-filled without being read; `thread` (0..127) is the
/// calling thread of the copying warpgroup, whose arrival on `bar` (noinc)
/// comes once its copies have landed.
void copySwizzledRows(const KernelBuilder &kb, const GlobalSlab &src,
                      Value base, Value row0, Value limit, Value dst,
                      int64_t numRows, int64_t width, Value thread, Value bar);

/// TMA loads of the column atoms of a [rows, width] tile at `dst`: rows
/// [row, row + rows) of slab `slab` of `map`'s tensor, completing on `bar`
/// (whose arrival must expect their bytes). Issued by the calling thread.
void loadTmaBoxes(const KernelBuilder &kb, Value map, Value dst, Value row,
                  Value slab, int64_t rows, int64_t width, Value bar);

/// The shared tiles and mbarriers, and the copies and waits on them. TMA
/// copies are issued by whoever calls them (the kernel lets one thread of
/// the producer warpgroup); row copies by the whole producer warpgroup;
/// waits and arrivals by every calling thread.
class TmaPipeline : public KernelBuilder {
public:
  /// The extern shared array, declared once per gpu.module.
  static constexpr StringLiteral kSharedMemorySymbol = "gated_attention_smem";
  static void declareSharedMemory(OpBuilder &b, Location loc,
                                  gpu::GPUModuleOp module);

  /// The pipeline of a kernel whose copies are TMA boxes.
  TmaPipeline(OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
              TmaBoxes boxes);
  /// The pipeline of a kernel that copies rows (cfg.copiesRows()); the
  /// producer sets their sources (setRowCopies) before its first copy.
  TmaPipeline(OpBuilder &b, Location loc, const FlashKernelConfig &cfg);
  void setRowCopies(RowCopies sources);
  /// The TMA kernel's Q and K/V slabs, set for each tile it computes.
  void setSlabs(Value querySlab, Value keySlab) {
    boxes->querySlab = querySlab;
    boxes->keySlab = keySlab;
  }

  /// Initializes the mbarriers (in the thread where `lead` holds) and makes
  /// them visible to the CTA and to the TMA unit; every thread must call it.
  void initBarriers(Value lead);
  /// Copies Q rows [rowBase, rowBase + queryBlock) (packed rows for row
  /// copies), completing on the query barrier.
  void loadQuery(Value rowBase);
  /// Consumers: wait until the Q of the tile of parity `parity` (i32) has
  /// landed.
  void waitQuery(Value parity);
  /// Producer (dense kernel): waits until the consumers have released the Q
  /// of the tile before the one of parity `parity` (i32).
  void waitQueryEmpty(Value parity);
  /// Consumers (dense kernel): one arrival (per warp) that the tile's Q is
  /// no longer read.
  void releaseQuery();
  /// Producer (persistent kernel), after its last tile: completes the
  /// query barrier's next phase without a copy, once the consumers have
  /// released the last tile's Q (`parity`: the tiles' count mod 2), so
  /// that the consumers' wait for a next tile's Q returns.
  void endQueries(Value parity);
  /// Producer: waits until the consumers have released the stage of the
  /// `which` tile of key block `block` (its previous block's).
  void waitEmpty(KeyValue which, Value block);
  /// Producer: copies the `which` tile of key block `block` into its stage:
  /// keys [tileBlock x keyBlock, ...) of its tile's sequence, tileBlock
  /// being `block` less the earlier tiles' blocks.
  void load(KeyValue which, Value block, Value tileBlock);
  /// Consumers: wait until the `which` tile of key block `block` has
  /// landed.
  void waitFull(KeyValue which, Value block);
  /// Consumers: one arrival (per warp) that the `which` tile of key block
  /// `block` is no longer read.
  void release(KeyValue which, Value block);

  /// !llvm.ptr<3> to the Q tile, and to the K and V tiles of `block`.
  Value queryTile();
  /// The gate barrier of consumer warp `warp` (FlashKernelConfig::stagesGate).
  Value gateBarrier(Value warp);
  Value keyTile(Value block);
  Value valueTile(Value block);
  /// The stage that key block `block` goes through, and the bytes between
  /// two stages of the `which` ring.
  Value stageOf(Value block);
  int64_t stageBytes(KeyValue which) const {
    return which == KeyValue::Key ? layout.keyStageBytes
                                  : layout.valueStageBytes;
  }

private:
  Value pointer(int64_t offset, Value stage = nullptr, int64_t stride = 0);
  /// The parity of the phase of block `block`'s use of its stage.
  Value phaseOf(Value block);
  /// The `full` or `empty` barrier of the `which` tile of `block`.
  Value barrier(bool full, KeyValue which, Value block);
  void wait(Value barrier, Value parity);
  /// TMA loads of the column atoms of a [rows, width] tile at `dst`.
  void loadTile(Value map, Value dst, Value row, Value slab, int64_t rows,
                int64_t width, Value bar);
  /// Row copies of rows [row0, row0 + numRows) of `src` (its buffer at
  /// `base`) into the [numRows, width] tile at `dst` (zero-filled at or
  /// past `limit`), then this thread's arrival on `bar` once they landed.
  void copyRows(const GlobalSlab &src, Value base, Value row0, Value limit,
                Value dst, int64_t numRows, int64_t width, Value bar);
  /// `buffer`'s first element as an !llvm.ptr<1>.
  Value globalPointer(Value buffer);
  /// Waits on a full barrier (of a key block or of Q), and with row copies
  /// the proxy fence that orders their writes before wgmma reads them.
  void waitLanded(Value barrier, Value parity);
  Value i32(Value index);
  Value i32(int64_t value);

  const FlashKernelConfig &cfg;
  TmaSharedLayout layout;
  std::optional<TmaBoxes> boxes;
  std::optional<RowCopies> rows;
  /// The global addresses of Q, K and V for row copies.
  Value queryBase, keyBase, valueBase;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TMA_PIPELINE_H
