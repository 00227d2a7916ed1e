//===- MmaSyncAtom.h - mma.sync m16n8k16 and its operands -------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The MMA atom of the sm_80 kernel: mma.sync.m16n8k16 with f16/bf16 inputs
// and f32 accumulators, its A and B operands loaded from swizzled shared
// tiles by ldmatrix, and the two GEMMs of a key block built from it.
//
// Operand layouts (PTX ISA, mma.m16n8k16 with .f16/.bf16 inputs): lane l,
// g = l / 4, t = l % 4. A (16x16, row): four b32 registers holding
// (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..). B (16x8, col):
// two registers holding (k = 2t..2t+1, n = g) and (k = 2t+8.., n = g). C/D
// is the layout of FragmentLayout.h, so a score tile is already the A
// operand of P V once rounded: the registers of two adjacent 8-key tiles
// are the A fragment of a 16-key chunk.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_MMA_SYNC_ATOM_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_MMA_SYNC_ATOM_H

#include "FragmentLayout.h"
#include "SharedTileLayout.h"

namespace mlir::gated_attention::flash {

class MmaSyncAtom : public KernelBuilder {
public:
  /// The k of the atom: a 16 x 16 A, a 16 x 8 B.
  static constexpr int64_t kK = 16;

  /// Builds the lane's ldmatrix row addresses. With `splitChunkOffsets`
  /// (backward kernels at the register cap: leanLoopState) a chunk's part
  /// above the swizzle's bits is added after the XOR rather than XORed
  /// with the rest: the same columns from fewer loop-invariant registers
  /// (fragmentColumn). The other kernels keep the whole XOR (the forward's
  /// PTX is pinned by mma-sync-ptx.test).
  MmaSyncAtom(OpBuilder &b, Location loc, Type elementType,
              const LaneLayout &lanes, ChunkSwizzle swizzle,
              bool splitChunkOffsets = false);

  /// The A fragment of the 16 x 16 block at (row0, 16 * kk) of a row-major
  /// shared tile (`prefix` indices first): Q, or V read transposed as the B
  /// operands of P V (see multiplyValues).
  Fragment loadA(Value tile, ValueRange prefix, Value row0, int64_t kk,
                 bool transpose);

  /// scores += Q K^T over head-dim chunk `kk`: `query` is the A fragment of
  /// Q's chunk kk, `keys` a [buffer?, keyBlock, D] shared tile.
  void multiplyKeys(AccumulatorTile scores, const Fragment &query, Value keys,
                    ValueRange prefix, int64_t kk);
  /// out += P V, P being `probabilities` (a score tile after the softmax)
  /// rounded to the element type, `values` a [buffer?, keyBlock, Dv] tile.
  void multiplyValues(AccumulatorTile out, AccumulatorTile probabilities,
                      Value values, ValueRange prefix);
  /// The same into the columns of `values` from 16-column chunk
  /// `firstChunk` (a run-time index: the backward's warps that split the
  /// columns), `out` as many columns wide.
  void multiplyValues(AccumulatorTile out, AccumulatorTile probabilities,
                      Value values, ValueRange prefix, Value firstChunk);

private:
  /// ldmatrix x4 at (row, column) of `tile`, as four b32 registers.
  Fragment loadFragments(Value tile, ValueRange prefix, Value row, Value column,
                         bool transpose);
  /// The column of the lane's ldmatrix row address for chunk `laneChunk +
  /// chunk`.
  Value fragmentColumn(Value laneChunk, int64_t chunk) const;
  /// acc += a * b on the tensor cores.
  void mma(ArrayRef<Value> a, ArrayRef<Value> bRegs,
           MutableArrayRef<Value> acc);

  Type elementType, f32, i32;
  ChunkSwizzle swizzle;
  bool splitChunkOffsets;
  /// ldmatrix row addresses: lane / 8 picks the 8x8 matrix, lane % 8 its
  /// row. A (and V^T): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
  /// (rows 0-7, k 8-15), (rows 8-15, k 8-15). K as B: (keys 0-7, k 0-7),
  /// (keys 0-7, k 8-15), (keys 8-15, k 0-7), (keys 8-15, k 8-15).
  Value laneRowA, laneChunkA, laneRowB, laneChunkB, laneSwizzle;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_MMA_SYNC_ATOM_H
