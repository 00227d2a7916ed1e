//===- MmaSyncAtom.cpp - mma.sync m16n8k16 and its operands ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "MmaSyncAtom.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

MmaSyncAtom::MmaSyncAtom(OpBuilder &b, Location loc, Type elementType,
                         const LaneLayout &lanes, ChunkSwizzle swizzle,
                         bool splitChunkOffsets)
    : KernelBuilder(b, loc), elementType(elementType), f32(b.getF32Type()),
      i32(b.getI32Type()), swizzle(swizzle),
      splitChunkOffsets(splitChunkOffsets) {
  Value matrix = div(lanes.lane, 8);
  Value row8 = rem(lanes.lane, 8);
  Value matrixLow = rem(matrix, 2);
  Value matrixHigh = div(matrix, 2);
  laneRowA = add(mul(matrixLow, 8), row8);
  laneChunkA = matrixHigh;
  laneRowB = add(mul(matrixHigh, 8), row8);
  laneChunkB = matrixLow;
  // An ldmatrix row address is an 8-aligned row plus the lane's row within
  // the 8x8 matrix, so its swizzle bits are the lane's.
  laneSwizzle = swizzle.bits(*this, row8);
}

Value MmaSyncAtom::fragmentColumn(Value laneChunk, int64_t chunk) const {
  if (!splitChunkOffsets)
    return swizzle.column(*this, add(laneChunk, chunk), laneSwizzle);
  // Only the part of `chunk` within the swizzle's bits goes through the
  // XOR; the rest is added after it. The chunks of a row then share the
  // lane's few swizzled columns (one at a 1-bit swizzle) plus immediate
  // offsets: XORed whole, each was a register of its own through the key
  // loop (the backward's dK/dV kernel at D 64/48 or 128/112 spilled them).
  int64_t high = swizzle.unswizzledChunks(chunk);
  Value column =
      swizzle.column(*this, add(laneChunk, chunk - high), laneSwizzle);
  return add(column, high * ChunkSwizzle::kChunkElements);
}

Fragment MmaSyncAtom::loadA(Value tile, ValueRange prefix, Value row0,
                            int64_t kk, bool transpose) {
  return loadFragments(tile, prefix, add(laneRowA, row0),
                       fragmentColumn(laneChunkA, 2 * kk), transpose);
}

Fragment MmaSyncAtom::loadFragments(Value tile, ValueRange prefix, Value row,
                                    Value column, bool transpose) {
  SmallVector<Value> indices(prefix);
  indices.push_back(row);
  indices.push_back(column);
  Value x4 =
      nvgpu::LdMatrixOp::create(b, loc, VectorType::get({4, 2}, elementType),
                                tile, indices, transpose, 4);
  Fragment regs;
  for (int64_t i = 0; i < 4; ++i) {
    Value pair = vector::ExtractOp::create(b, loc, x4, i);
    Value word =
        vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair);
    regs.push_back(vector::ExtractOp::create(b, loc, word, 0));
  }
  return regs;
}

void MmaSyncAtom::mma(ArrayRef<Value> a, ArrayRef<Value> bRegs,
                      MutableArrayRef<Value> acc) {
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                     SmallVector<Type>(4, f32));
  bool bf16 = elementType.isBF16();
  NVVM::MMATypes ptxType = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  // NVVM takes bf16 pairs as b32 and f16 pairs as vector<2xf16>.
  auto operand = [&](Value reg) -> Value {
    if (bf16)
      return reg;
    Value word =
        vector::BroadcastOp::create(b, loc, VectorType::get({1}, i32), reg);
    return vector::BitCastOp::create(b, loc, VectorType::get({2}, elementType),
                                     word);
  };
  SmallVector<Value, 4> aOps, bOps;
  for (Value reg : a)
    aOps.push_back(operand(reg));
  for (Value reg : bRegs)
    bOps.push_back(operand(reg));
  Value d = NVVM::MmaOp::create(
      b, loc, resultType, aOps, bOps, acc, {16, 8, 16}, std::nullopt,
      std::nullopt, std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t i = 0; i < 4; ++i)
    acc[i] = LLVM::ExtractValueOp::create(b, loc, d, i);
}

void MmaSyncAtom::multiplyKeys(AccumulatorTile scores, const Fragment &query,
                               Value keys, ValueRange prefix, int64_t kk) {
  // One ldmatrix x4 of K per 16 keys: the B fragments of two 8-key tiles.
  for (int64_t np = 0; np < scores.numTiles() / 2; ++np) {
    Fragment kf = loadFragments(keys, prefix, add(laneRowB, 16 * np),
                                fragmentColumn(laneChunkB, 2 * kk), false);
    mma(query, {kf[0], kf[1]}, scores.tile(2 * np));
    mma(query, {kf[2], kf[3]}, scores.tile(2 * np + 1));
  }
}

void MmaSyncAtom::multiplyValues(AccumulatorTile out,
                                 AccumulatorTile probabilities, Value values,
                                 ValueRange prefix) {
  // V fragments come transposed from ldmatrix.
  for (int64_t kk = 0; kk < probabilities.numTiles() / 2; ++kk) {
    Fragment a = probabilityFragment(*this, probabilities, kk, elementType);
    for (int64_t dp = 0; dp < out.numTiles() / 2; ++dp) {
      Fragment vf = loadA(values, prefix, idx(16 * kk), dp, true);
      mma(a, {vf[0], vf[1]}, out.tile(2 * dp));
      mma(a, {vf[2], vf[3]}, out.tile(2 * dp + 1));
    }
  }
}

void MmaSyncAtom::multiplyValues(AccumulatorTile out,
                                 AccumulatorTile probabilities, Value values,
                                 ValueRange prefix, Value firstChunk) {
  // 16-column chunk c is 8-element chunks 2c and 2c + 1; the swizzle
  // applies to the whole chunk index, offset included. With
  // splitChunkOffsets the run-time offset stays under the XOR with the
  // chunk's low part, so it need not be a multiple of the swizzle's span
  // (D = 224's second warp starts at chunk 14 of a 4-chunk span).
  Value chunkBase = add(laneChunkA, mul(firstChunk, 2));
  for (int64_t kk = 0; kk < probabilities.numTiles() / 2; ++kk) {
    Fragment a = probabilityFragment(*this, probabilities, kk, elementType);
    for (int64_t dp = 0; dp < out.numTiles() / 2; ++dp) {
      Fragment vf = loadFragments(values, prefix, add(laneRowA, 16 * kk),
                                  fragmentColumn(chunkBase, 2 * dp),
                                  /*transpose=*/true);
      mma(a, {vf[0], vf[1]}, out.tile(2 * dp));
      mma(a, {vf[2], vf[3]}, out.tile(2 * dp + 1));
    }
  }
}
