//===- FragmentLayout.h - where a lane's accumulators are -------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The accumulator layout that the online softmax, the mask and the epilogue
// work on. It is the C/D layout of mma.sync m16n8 (PTX ISA, "Matrix
// Fragments for mma.m16n8k16"), and also each warp's slice of a wgmma
// m64nN D (warp w of the warpgroup holding rows 16w..16w+15), so both
// kernels share everything written against it: lane l, g = l / 4 and
// t = l % 4, holds of every 8-column tile n the four elements
//   (g, 8n + 2t), (g, 8n + 2t + 1), (g + 8, 8n + 2t), (g + 8, 8n + 2t + 1),
// in that register order. A row is spread over the four lanes of a quad.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FRAGMENT_LAYOUT_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FRAGMENT_LAYOUT_H

#include "KernelBuilder.h"

namespace mlir::gated_attention::flash {

/// A lane's registers of a 16 x (8 * numTiles()) f32 accumulator, viewed in
/// the layout above (not owning them).
class AccumulatorTile {
public:
  /// Rows per lane (g and g + 8), and elements per row and 8-column tile.
  static constexpr int64_t kRowsPerLane = 2;
  static constexpr int64_t kColumnsPerLane = 2;
  static constexpr int64_t kRegistersPerTile = kRowsPerLane * kColumnsPerLane;
  /// Registers per lane of an accumulator `columns` wide.
  static constexpr int64_t numRegisters(int64_t columns) {
    return columns / 8 * kRegistersPerTile;
  }

  explicit AccumulatorTile(MutableArrayRef<Value> registers)
      : registers(registers) {}

  int64_t numTiles() const { return registers.size() / kRegistersPerTile; }
  /// All registers, in layout order.
  MutableArrayRef<Value> values() const { return registers; }
  /// Element (row g + 8 * half, column 8 * tile + 2t + column).
  Value &at(int64_t tile, int64_t half, int64_t column) const {
    return registers[tile * kRegistersPerTile + half * kColumnsPerLane +
                     column];
  }
  /// The four registers of 8-column tile `tile`: the C/D of one mma.sync.
  MutableArrayRef<Value> tile(int64_t tile) const {
    return registers.slice(tile * kRegistersPerTile, kRegistersPerTile);
  }
  /// Calls fn(tile, column, element) on every element of row half `half`.
  void forEachInRow(int64_t half,
                    function_ref<void(int64_t, int64_t, Value &)> fn) const {
    for (int64_t t = 0; t < numTiles(); ++t)
      for (int64_t c = 0; c < kColumnsPerLane; ++c)
        fn(t, c, at(t, half, c));
  }

private:
  MutableArrayRef<Value> registers;
};

/// The thread's place in the layout.
struct LaneLayout {
  Value thread, warp, lane;
  /// g = lane / 4 (the lane's row in a 16-row tile, and g + 8) and
  /// t = lane % 4 (its column pair in each 8-column tile).
  Value quadRow, quadCol;

  static LaneLayout build(const KernelBuilder &kb);
  /// The layout of thread `thread` of a group of warps (a warpgroup's
  /// threads counted from its first).
  static LaneLayout build(const KernelBuilder &kb, Value thread);

  /// The row of the lane's row half `half` in a tile starting at `row0`.
  Value row(const KernelBuilder &kb, Value row0, int64_t half) const {
    return kb.add(kb.add(row0, quadRow), 8 * half);
  }
  /// The first of the lane's two columns in each 8-column tile: 2t.
  Value columnPair(const KernelBuilder &kb) const {
    return kb.mul(quadCol, AccumulatorTile::kColumnsPerLane);
  }
};

/// Four b32 registers: an A fragment of a k16 MMA step (or two B ones).
using Fragment = SmallVector<Value, 4>;

/// The A fragment of key step `kk` (keys 16kk..16kk+15) of P V, P being the
/// scores after the softmax rounded to `elementType`: for 16-bit inputs the
/// accumulator layout is the A layout of mma.sync m16n8k16 and of wgmma's
/// register-A form, so the registers of key tiles 2kk and 2kk+1 are the
/// fragment, packed pairwise.
Fragment probabilityFragment(const KernelBuilder &kb, AccumulatorTile p,
                             int64_t kk, Type elementType);

/// Reduces `x` (f32) over the four lanes of a quad, that is over a row:
/// the maximum or the sum.
Value quadReduce(const KernelBuilder &kb, Value x, bool isMax);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_FRAGMENT_LAYOUT_H
