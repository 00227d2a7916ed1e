//===- WgmmaAtom.h - wgmma.mma_async and its descriptors --------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The MMA atom of the sm_90a kernel: warpgroup-wide wgmma.mma_async
// m64nNk16 (f16/bf16 in, f32 accumulators) on operands in 128-byte-swizzled
// shared memory, addressed by 64-bit matrix descriptors (PTX ISA, "Matrix
// Descriptor Format"), and the register-A form for P V, which MLIR 22 has no
// op for (inline PTX). The accumulators are an !llvm.struct of N/2 f32 per
// thread in the layout of FragmentLayout.h (warp w of the warpgroup holds
// rows 16w..16w+15), so the softmax and the epilogue of the mma.sync kernel
// apply unchanged.
//
// Shared tiles are stored as column atoms: each 64-element (128-byte) wide
// slice of a [rows, D] tile is a [rows, 64] block of 128-byte rows, 16-byte
// chunks XOR-swizzled by row % 8, the layout a TMA box with 128B swizzle
// writes. Atoms are 1024-byte aligned (8 rows), so descriptors need no base
// offset.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_WGMMA_ATOM_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_WGMMA_ATOM_H

#include "FragmentLayout.h"

#include <cstdint>

namespace mlir::gated_attention::flash {

/// Elements per 128-byte swizzle span (and TMA box width) of 16-bit data.
constexpr int64_t kSwizzleSpanElements = 64;
constexpr int64_t kSwizzleSpanBytes = 128;

/// The constant bits of a 128B-swizzled operand's descriptor: leading byte
/// offset `lbo`, stride byte offset `sbo` (both multiples of 16), swizzle
/// mode 1 (128B) in bits 62-63; the start address goes in bits 0-13.
constexpr uint64_t wgmmaDescriptorBits(uint64_t lbo, uint64_t sbo) {
  return ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 |
         uint64_t(1) << 62;
}

/// Byte offset, within a column-atom tile of `rows` rows, of the k16 step
/// `kk` along the contiguous (K) dimension: +32 bytes per step inside an
/// atom, `rows` x 128 bytes per atom.
constexpr int64_t kMajorStepOffset(int64_t rows, int64_t kk) {
  return kk / 4 * rows * kSwizzleSpanBytes + kk % 4 * 32;
}

/// Byte offset of 16-byte chunk `chunk` of row `row` in a column-atom tile
/// of `rows` rows (the chunk's atom, the row's 128 bytes in it, the chunk
/// XOR-swizzled by row % 8): where a TMA box with 128B swizzle puts it, for
/// copies that write the layout themselves.
Value swizzledChunkOffset(const KernelBuilder &kb, Value row, Value chunk,
                          int64_t rows);

/// The warpgroup of `thread` (thread.x / 128), read from lane 0 so that
/// ptxas knows it to be uniform and keeps what derives from it (tile
/// offsets, descriptors, barrier ids) in uniform registers.
Value uniformWarpgroup(const KernelBuilder &kb, Value thread);

class WgmmaAtom : public KernelBuilder {
public:
  static constexpr int64_t kM = 64, kK = 16;

  WgmmaAtom(OpBuilder &b, Location loc, Type elementType)
      : KernelBuilder(b, loc), elementType(elementType) {}

  /// The descriptor of a K-major operand (Q as A, K as B of Q K^T) whose
  /// tile starts at `tile`: stride 1024 bytes between 8-row groups, no
  /// leading offset (one atom spans the k16 step).
  Value kMajorDescriptor(Value tile);
  /// The descriptor of an N-major B operand (V of P V) of `rows` rows:
  /// stride 1024 bytes between 8-row groups along K, leading offset
  /// `rows` x 128 bytes between column atoms along N.
  Value nMajorDescriptor(Value tile, int64_t rows);
  /// `descriptor` advanced by `bytes` (a multiple of 16).
  Value advance(Value descriptor, int64_t bytes);
  /// The descriptor of stage `stage` (an index) of a ring whose stages are
  /// `stageBytes` apart, from `first`, stage 0's: its low word plus stage x
  /// stageBytes / 16, no carry (shared addresses are below 2^18). A loop
  /// computes `first` once and one multiply-add per block, where building
  /// the descriptor from the stage's address takes five.
  Value stageDescriptor(Value first, Value stage, int64_t stageBytes);

  /// Issues scores = Q K^T for a `keys`-key block as one commit group: D /
  /// 16 SS wgmmas m64 n`keys`, A being 64 rows of a `queryRows`-row Q tile.
  /// Returns the accumulator struct, to be read after wait().
  Value issueKeys(Value queryDescriptor, int64_t queryRows, Value keyDescriptor,
                  int64_t headDim, int64_t keys);
  /// Issues out += P V as one commit group: `probabilities` the packed A
  /// fragments of P (probabilityFragments), V an N-major [keys, Dv] tile.
  /// Returns the new accumulator registers, to be read after wait().
  SmallVector<Value> issueValues(ArrayRef<Value> out,
                                 ArrayRef<Value> probabilities,
                                 Value valueDescriptor, int64_t keys);
  /// Waits until at most `pending` commit groups are in flight.
  void wait(int64_t pending);

  /// P (scores after the softmax) rounded to the element type and packed as
  /// the A fragments of the `keys / 16` k16 steps of P V, 4 b32 registers
  /// each.
  SmallVector<Value> probabilityFragments(AccumulatorTile p, int64_t keys);

  /// The accumulator registers of struct `acc`, in layout order.
  SmallVector<Value> unpack(Value acc);

private:
  Type structType(int64_t registers);
  void fence();

  Type elementType;
};

/// PTX `text` as an LLVM inline asm of result type `type` (`constraints` in
/// LLVM's syntax); with `sideEffects` LLVM keeps it in order with the other
/// side effects, and what derives from its result below them.
Value inlinePtx(OpBuilder &b, Location loc, Type type, ValueRange operands,
                StringRef text, StringRef constraints, bool sideEffects);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_WGMMA_ATOM_H
