//===- SharedTileLayout.h - swizzled tiles in shared memory -----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The layout of the mma.sync kernel's shared tiles: row-major, with the
// 16-byte chunks of each row XOR-swizzled by the row's low bits, so that the
// eight row addresses of an ldmatrix (eight consecutive rows, one chunk
// column) hit distinct banks. The copies write it, the ldmatrix reads it.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_SHARED_TILE_LAYOUT_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_SHARED_TILE_LAYOUT_H

#include "KernelBuilder.h"

#include <algorithm>

namespace mlir::gated_attention::flash {

class ChunkSwizzle {
public:
  /// Elements per 16-byte chunk of a 16-bit tile.
  static constexpr int64_t kChunkElements = 8;

  /// The swizzle of tiles with rows of `d` and of `dv` elements: the row
  /// modulo the largest power of two, at most 8 (8 rows = 8 distinct
  /// chunks), that divides both rows' chunk counts, so that the XOR stays
  /// inside every row (the narrower row's count is not enough: D = 64 has
  /// 8 chunks, Dv = 96 has 12); none where a count is odd.
  static ChunkSwizzle forRowWidths(int64_t d, int64_t dv) {
    int64_t chunks = (d | dv) / kChunkElements;
    return ChunkSwizzle(std::min<int64_t>(chunks & -chunks, 8) - 1);
  }

  /// The swizzle bits of tile row `row` (null without swizzle).
  Value bits(const KernelBuilder &kb, Value row) const {
    return mask ? arith::AndIOp::create(kb.builder(), kb.location(), row,
                                        kb.idx(mask))
                      .getResult()
                : Value();
  }
  /// The part of chunk index `chunk` above the swizzle's bits: the XOR
  /// leaves it alone, so (x + high) ^ bits = (x ^ bits) + high.
  int64_t unswizzledChunks(int64_t chunk) const { return chunk & ~mask; }

  /// Column (in elements) of 16-byte chunk `chunk` of a row whose swizzle
  /// bits are `bits`.
  Value column(const KernelBuilder &kb, Value chunk, Value bits) const {
    return kb.mul(
        bits ? arith::XOrIOp::create(kb.builder(), kb.location(), chunk, bits)
                   .getResult()
             : chunk,
        kChunkElements);
  }

private:
  explicit ChunkSwizzle(int64_t mask) : mask(mask) {}
  int64_t mask;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_SHARED_TILE_LAYOUT_H
