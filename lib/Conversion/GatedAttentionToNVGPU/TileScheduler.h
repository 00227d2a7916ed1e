//===- TileScheduler.h - which tile a CTA computes, which keys --*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The CTA-to-tile mapping of the flash kernels and, per tile, the range of
// key blocks to visit and which of them need the mask (FlashAttention-3's
// tile_scheduler.hpp and block.h). The causal mask is bottom-right aligned:
// key j is visible from query row i iff j <= i + Skv - Sq (AttentionMath.h).
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TILE_SCHEDULER_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TILE_SCHEDULER_H

#include "KernelBuilder.h"

namespace mlir::gated_attention::flash {

/// Where an operand's elements are: [b, h, s, d] at b * batch + h * head +
/// s * row + d (kernel arguments, in elements).
struct OperandStrides {
  Value batch, head, row;
};

/// The rows [rowBase, rowBase + rows) of query head `head` of batch `batch`.
struct FlashTile {
  Value batch, head, rowBase;

  /// The index of head `h` of this tile's batch among the B x `heads`
  /// (batch, head) slabs of an operand (the wgmma kernel's TMA
  /// coordinate).
  Value slab(const KernelBuilder &kb, Value h, int64_t heads) const {
    return kb.add(kb.mul(batch, heads), h);
  }
  /// The offset of row 0 of head `h` of this tile's batch in an operand
  /// laid out by `strides`.
  Value slabOffset(const KernelBuilder &kb, Value h,
                   const OperandStrides &strides) const {
    return kb.add(kb.mul(batch, strides.batch), kb.mul(h, strides.head));
  }
};

/// The tile of this CTA in a grid of (ceildiv(Sq, rows), Hq, B): query
/// blocks run in reverse, so that the heaviest causal blocks (the most keys)
/// are scheduled first.
FlashTile scheduleTile(const KernelBuilder &kb, int64_t rows);

/// The tiles of a dense kernel in one sequence, longest first: tile t is
/// query block ceildiv(Sq, rows) - 1 - t / (heads x B) (the last block, the
/// one with the most keys under the causal mask, first) of slab t % (heads
/// x B) (b x heads + h: heads fastest). A CTA computes tiles c, c + n,
/// c + 2n, ... below numTiles, c its linear index in the grid and n the
/// grid's CTAs (FlashAttention-3's persistent scheduler): a grid of one CTA
/// per tile, whatever its shape, computes each tile once; a smaller one
/// loops.
class TileSequence {
public:
  /// Tiles of `rows` query rows of `heads` heads of `batches` sequences.
  TileSequence(int64_t rows, int64_t heads, Value batches)
      : rows(rows), heads(heads), batches(batches) {}

  /// This CTA's first tile: its linear index in the grid.
  static Value firstTile(const KernelBuilder &kb);
  /// The grid's CTAs, the step from one of a CTA's tiles to the next, from
  /// the grid's dims.
  static Value numCTAs(const KernelBuilder &kb, Value x, Value y, Value z);
  /// The tiles of a launch on Sq = `numRows`.
  Value numTiles(const KernelBuilder &kb, Value numRows) const;
  /// Tile `t` of that launch; `slab` is its b x heads + h.
  FlashTile tile(const KernelBuilder &kb, Value t, Value numRows,
                 Value &slab) const;

private:
  int64_t rows, heads;
  Value batches;
};

/// A tile of the paged kernel: rows [rowBase, rowBase + rows) of query head
/// `head` of sequence `batch`, whose q_b = `numRows` queries start at packed
/// row `firstRow`; `active` is false for the CTAs past its last block.
struct VarlenTile {
  FlashTile tile;
  Value firstRow, numRows, active;
};

/// The tile of this CTA in a grid of (ceildiv(T, rows) + B, Hq) over the
/// packed queries of B sequences (`cuSeqlens`, B + 1 offsets in device
/// memory): sequence b's blocks are CTAs [floor(cu[b] / rows) + b, ...),
/// a numbering in which the sequences' ranges never overlap (each holds
/// ceildiv(q_b, rows) blocks and at most one idle CTA). No host-side
/// lengths are needed, and blocks run last-first within a sequence.
VarlenTile scheduleVarlenTile(const KernelBuilder &kb, int64_t rows,
                              Value cuSeqlens, Value numSeqs);

/// The key blocks of `keyBlock` keys that a tile visits, and the rows'
/// bounds on visible keys.
class KeyBlockRange {
public:
  /// Rows [rowBase, rowBase + rows) of a sequence of Sq = numRows; with
  /// rowGroup G > 1 the tile's rows are packed (row, head) pairs and
  /// keyLimit takes the packed row p of sequence row p / G.
  KeyBlockRange(const KernelBuilder &kb, bool causal, int64_t keyBlock,
                Value rowBase, int64_t rows, Value numRows, Value numKeys,
                int64_t rowGroup = 1);

  /// Blocks [0, numBlocks) hold every key that a row of the tile sees;
  /// under the causal mask the later blocks are never visited.
  Value numBlocks() const { return blocks; }
  /// Restricts the range to the `split`-th of `splits` equal parts (split-KV
  /// decode: CTAs of one tile share its key blocks); a part may be empty.
  void splitAcross(const KernelBuilder &kb, Value split, Value splits);
  /// Numbers the blocks from `base` on, block j of the tile being base + j
  /// (a persistent kernel's running count of blocks through its copy
  /// pipeline, whose stage and phase it gives): numBlocks, firstBlock,
  /// buildKeyLoop's counter and isMasked then count so, and local() gives
  /// the tile's block back. The mask's bound moves with them, so that the
  /// loop's test costs what it did. Not with splitAcross.
  void countFrom(const KernelBuilder &kb, Value base);
  /// The tile's block of a block numbered as countFrom says.
  Value local(const KernelBuilder &kb, Value block) const {
    return base ? kb.sub(block, base) : block;
  }
  /// The first block to visit: 0 (null), the split's first, or countFrom's
  /// base.
  Value firstBlock() const { return begin; }
  /// Whether block `block` needs the mask: it holds keys past Skv or
  /// (causal) keys that the tile's first row does not see.
  Value isMasked(const KernelBuilder &kb, Value block) const;
  /// isMasked of an i32 block, compared in i32.
  Value isMaskedNarrow(const KernelBuilder &kb, Value block) const;
  /// Keys at or past this bound are masked for query row `row`: Skv, or
  /// (causal) min(row + Skv - Sq + 1, Skv).
  Value keyLimit(const KernelBuilder &kb, Value row) const;

private:
  bool causal;
  int64_t keyBlock, rowGroup;
  Value numKeys, offset, blocks, unmaskedEnd;
  /// Null unless split or counted from a base: the range starts at block 0.
  Value begin;
  /// countFrom's base (null: 0).
  Value base;
};

/// The loop over the tile's key blocks, carrying `init`: at the top of
/// iteration j, `begin(j)` (the copy pipeline's step); then `step(j,
/// masked, state)` updates `state` in place, built twice (with and without
/// the mask) and chosen per block. The loop starts at block `first` (a
/// kernel that peels the first block). With `narrow` the loop counts in
/// i32 (j, an index, is its extension) and tests the mask in i32: a
/// 64-bit counter costs a carry per add and two compares per test in every
/// iteration (block counts are far below 2^31). Returns the final values.
SmallVector<Value>
buildKeyLoop(const KernelBuilder &kb, const KeyBlockRange &range,
             ValueRange init, function_ref<void(Value)> begin,
             function_ref<void(Value, bool, MutableArrayRef<Value>)> step,
             int64_t first = 0, bool narrow = false);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TILE_SCHEDULER_H
