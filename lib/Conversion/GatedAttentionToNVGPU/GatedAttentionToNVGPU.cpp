//===- GatedAttentionToNVGPU.cpp - the tensor-core flash kernel -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Emits the FlashAttention-2 forward kernel with the gate in its epilogue for
// f16/bf16 attention on sm_80+ tensor cores, as a gpu.func in a gpu.module,
// and replaces the op by a gpu.launch_func of it.
//
// One CTA computes `16 * warps` query rows of one (batch, query head); each
// warp owns 16 rows, the M of the m16n8k16 mma. K and V tiles of `key-block`
// rows are staged in dynamic shared memory by cp.async, double buffered: the
// copy of block j+1 is in flight while block j is multiplied. Shared tiles
// are XOR-swizzled in 16-byte chunks so that the eight row addresses of an
// ldmatrix hit distinct banks.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .f16/.bf16 inputs): lane l,
// g = l / 4, t = l % 4. A (16x16, row): four b32 registers holding
// (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..). B (16x8, col): two
// registers holding (k = 2t..2t+1, n = g) and (k = 2t+8.., n = g).
// C/D (16x8 f32): (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1). A score tile
// is therefore already the A operand of P * V once rounded: the registers
// of two adjacent 8-key tiles are the A fragment of a 16-key chunk.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/GatedAttentionToNVGPU.h"
#include "GatedAttention/Conversion/ConvertAttentionOps.h"
#include "GatedAttention/Conversion/NVGPUChips.h"
#include "GatedAttention/Conversion/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mlir::gated_attention {
#define GEN_PASS_DEF_CONVERTGATEDATTENTIONTONVGPUPASS
#include "GatedAttention/Conversion/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

//===----------------------------------------------------------------------===//
// Kernel configuration
//===----------------------------------------------------------------------===//

namespace {
/// Everything the kernel depends on. Batch and sequence lengths are not part
/// of it: they are kernel arguments, so ops that differ only in them share
/// one kernel.
struct FlashKernelConfig {
  Type elementType;
  int64_t numQueryHeads, numKeyValueHeads, numGateHeads, gateWidth;
  int64_t headDim, valueHeadDim;
  bool causal;
  double scale;
  Attribute gate;
  CombineKind combine;
  int64_t warps, keyBlock;
  /// Whether the op has a gate; without one the epilogue is O / l.
  bool hasGate;

  int64_t threads() const { return 32 * warps; }
  int64_t queryBlock() const { return 16 * warps; }
  int64_t elementBytes() const { return 2; }
  int64_t queryTileBytes() const {
    return queryBlock() * headDim * elementBytes();
  }
  int64_t keyTileBytes() const { return keyBlock * headDim * elementBytes(); }
  int64_t valueTileBytes() const {
    return keyBlock * valueHeadDim * elementBytes();
  }
  /// Q, then two K tiles, then two V tiles.
  int64_t sharedMemoryBytes() const {
    return queryTileBytes() + 2 * keyTileBytes() + 2 * valueTileBytes();
  }
  /// Q fragments stay in registers for D <= 128; at D = 256 they would take
  /// 64 of the 255 registers that the O accumulators already crowd, so they
  /// are re-read from shared memory for every key block.
  bool queryInRegisters() const { return headDim <= 128; }

  std::string typeName() const {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << elementType;
    return s;
  }
  /// A readable kernel name; `uniqueKey` tells kernels of one name apart.
  std::string baseName() const {
    return llvm::formatv("gated_attention_{0}_h{1}x{2}_d{3}{4}{5}", typeName(),
                         numQueryHeads, numKeyValueHeads, headDim,
                         causal ? "_causal" : "",
                         !hasGate         ? "_nogate"
                         : gateWidth == 1 ? "_headwise"
                                          : "")
        .str();
  }
  std::string uniqueKey() const {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << elementType << ' ' << numQueryHeads << ' ' << numKeyValueHeads << ' '
       << numGateHeads << ' ' << gateWidth << ' ' << headDim << ' '
       << valueHeadDim << ' ' << causal << ' ' << llvm::format("%a", scale)
       << ' ' << gate << ' ' << stringifyCombineKind(combine) << ' ' << warps
       << ' ' << keyBlock << ' ' << hasGate;
    return s;
  }
};
} // namespace

/// Upper bounds of the tile options: 8 warps of 255-register threads fill
/// an SM's 64K registers; 1024 keys per block is beyond any chip's shared
/// memory at the smallest head dim.
static constexpr int64_t kMaxWarps = 8;
static constexpr int64_t kMaxKeyBlock = 1024;
static constexpr int64_t kMaxGridYZ = 65535;

static std::string printSize(int64_t size) {
  return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
}

/// Warps per CTA and keys per block for `op`, where the options leave them
/// at 0. The O accumulators take Dv / 2 registers per lane and the scores
/// key-block / 8: the choices keep ptxas within 255 registers and without
/// spills for D = 64, 128 and 256 on sm_80 and sm_90 (checked by
/// test/Pipelines/ptxas.test).
static std::pair<int64_t, int64_t> chooseTiles(AttentionOp op, int64_t warps,
                                               int64_t keyBlock) {
  int64_t d = std::max(op.getHeadDim(), op.getValueHeadDim());
  if (!warps)
    warps = d <= 128 ? 4 : 8;
  if (!keyBlock)
    keyBlock = d <= 64 ? 128 : d <= 128 ? 64 : 32;
  return {warps, keyBlock};
}

/// Why `op` cannot use the tensor-core kernel at all, or "". (The op's
/// verifier already guarantees one element type and static head counts and
/// dims.) Such ops are left for the SIMT lowering.
static std::string unsupportedReason(AttentionOp op) {
  Type t = op.getQueryType().getElementType();
  if (!t.isF16() && !t.isBF16())
    return "element type is not f16 or bf16";
  int64_t d = op.getHeadDim(), dv = op.getValueHeadDim();
  if (d % 16 || dv % 16 || d > 256 || dv > 256)
    return "head dims must be multiples of 16 up to 256";
  return "";
}

/// Why the tiles (`warps`, `keyBlock`) do not fit `op` on a chip with
/// `maxSharedMemory` bytes per CTA, or "": an error, since the user asked
/// for them.
static std::string tileError(AttentionOp op, int64_t warps, int64_t keyBlock,
                             int64_t maxSharedMemory) {
  // 255 registers per thread (what the kernel takes at D = 256) times the
  // threads of 8 warps is the 64K-register file of an SM.
  if (warps < 1 || warps > kMaxWarps)
    return llvm::formatv("warps must be in [1, {0}], got {1}", kMaxWarps,
                         warps);
  if (keyBlock <= 0 || keyBlock % 16 || keyBlock > kMaxKeyBlock)
    return llvm::formatv(
        "key-block must be a multiple of 16 in [16, {0}], got {1}",
        kMaxKeyBlock, keyBlock);
  int64_t d = op.getHeadDim(), dv = op.getValueHeadDim();
  // Every thread copies the same number of 16-byte chunks of a K/V tile.
  for (int64_t width : {d, dv})
    if ((keyBlock * width / 8) % (32 * warps))
      return llvm::formatv("key-block x head dim / 8 ({0} x {1} / 8) must be "
                           "a multiple of the {2} threads",
                           keyBlock, width, 32 * warps);
  // Q, two K tiles and two V tiles (see FlashKernelConfig).
  int64_t bytes = 2 * (16 * warps * d + 2 * keyBlock * (d + dv));
  if (bytes > maxSharedMemory)
    return llvm::formatv("the kernel's tiles need {0} bytes of shared memory, "
                         "more than the {1} a CTA may use on this chip; use "
                         "fewer warps or a smaller key-block",
                         bytes, maxSharedMemory);
  return "";
}

//===----------------------------------------------------------------------===//
// Kernel emission
//===----------------------------------------------------------------------===//

namespace {
/// Builds the body of the kernel for one configuration. The kernel's
/// arguments are (q, k, v, gate, out : memref<?xT>, Sq, Skv : index), the
/// buffers flattened row-major from [B, H, S, D].
class FlashKernelEmitter {
public:
  FlashKernelEmitter(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : b(b), loc(loc), cfg(cfg), f32(b.getF32Type()), i32(b.getI32Type()) {}

  void emit(gpu::GPUFuncOp func);

private:
  // Constants and index arithmetic.
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32c(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, idx(y));
  }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value fmax(Value x, Value y) {
    return arith::MaxNumFOp::create(b, loc, x, y);
  }

  /// The swizzle bits of shared-tile row `row` (null without swizzle).
  Value swizzleBits(Value row) {
    return swizzleMask ? arith::AndIOp::create(b, loc, row, idx(swizzleMask))
                             .getResult()
                       : Value();
  }
  /// Column (in elements) of 16-byte chunk `chunk` of a row whose swizzle
  /// bits are `bits`.
  Value chunkColumn(Value chunk, Value bits) {
    return mul(bits ? arith::XOrIOp::create(b, loc, chunk, bits).getResult()
                    : chunk,
               8);
  }
  /// The same for an ldmatrix row address: its row is 8-aligned plus the
  /// lane's row within the 8x8 matrix, so the swizzle bits are the lane's.
  Value fragmentColumn(Value chunk) { return chunkColumn(chunk, laneSwizzle); }
  /// The query A fragment of head-dim chunk `kk` (16 dims) from shared memory.
  SmallVector<Value, 4> loadQueryFragment(int64_t kk) {
    return loadFragments(qTile, {}, add(laneRowA, warpTileRow),
                         fragmentColumn(add(laneChunkA, 2 * kk)), false);
  }

  /// Issues the cp.async copies of rows [row0, row0 + rows) of a [S, width]
  /// slab starting at element `base` of `src` into `dst[prefix..., r, c]`;
  /// rows at or past `limit` are zero-filled without reading memory.
  void copyTile(Value src, Value base, Value row0, Value limit, Value dst,
                ValueRange prefix, int64_t rows, int64_t width,
                SmallVectorImpl<Value> &tokens);
  /// ldmatrix x4 at (row, column) of `tile` (with `prefix` indices first),
  /// returned as four b32 registers.
  SmallVector<Value, 4> loadFragments(Value tile, ValueRange prefix, Value row,
                                      Value column, bool transpose);
  /// acc += a * b on the tensor cores.
  void mma(ArrayRef<Value> a, ArrayRef<Value> bRegs,
           MutableArrayRef<Value> acc);
  /// Two f32 rounded to the element type, packed in a b32 register.
  Value pack(Value lo, Value hi);
  /// Reduces `x` over the four lanes of a quad (the lanes of one row).
  Value quadReduce(Value x, bool isMax);

  /// One key block: S = Q K^T, online softmax, O += P V. `state` is
  /// (m0, m1, l0, l1, o...) and is updated in place.
  void emitKeyBlock(Value block, Value buffer, bool masked,
                    MutableArrayRef<Value> state);
  void emitEpilogue(ArrayRef<Value> state);

  OpBuilder &b;
  Location loc;
  const FlashKernelConfig &cfg;
  Type f32, i32;
  int64_t swizzleMask = 0;

  // Kernel arguments and per-thread values.
  Value q, k, v, g, out, numRows, numKeys;
  Value warp, quadRow, quadCol, laneRowA, laneChunkA, laneRowB, laneChunkB,
      laneSwizzle;
  // warpRow is the warp's first query row in the sequence, warpTileRow the
  // same row in the shared Q tile.
  Value batch, head, rowBase /* q0 */, warpRow /* q0 + 16 warp */,
      warpTileRow /* 16 warp */;
  Value qBase, kBase, vBase, gBase, oBase;
  Value qTile, kTiles, vTiles;
  SmallVector<SmallVector<Value, 4>> queryFragments;
};
} // namespace

void FlashKernelEmitter::copyTile(Value src, Value base, Value row0,
                                  Value limit, Value dst, ValueRange prefix,
                                  int64_t rows, int64_t width,
                                  SmallVectorImpl<Value> &tokens) {
  int64_t chunksPerRow = width / 8;
  int64_t rowsPerPass = cfg.threads() / chunksPerRow;
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value threadRow = arith::DivUIOp::create(b, loc, tid, idx(chunksPerRow));
  Value chunk = arith::RemUIOp::create(b, loc, tid, idx(chunksPerRow));
  Value eight = idx(8), zero = idx(0);
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  for (int64_t pass = 0; pass * rowsPerPass < rows; ++pass) {
    Value r = add(threadRow, pass * rowsPerPass);
    Value row = add(row0, r);
    Value valid = lt(row, limit);
    Value srcRow = select(valid, row, zero);
    Value srcIndex = add(add(base, mul(srcRow, width)), mul(chunk, 8));
    SmallVector<Value> dstIndices(prefix);
    dstIndices.push_back(r);
    dstIndices.push_back(chunkColumn(chunk, swizzleBits(r)));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, tokenType, dst, dstIndices, src, ValueRange{srcIndex},
        b.getIndexAttr(8), select(valid, eight, zero), b.getUnitAttr()));
  }
}

SmallVector<Value, 4> FlashKernelEmitter::loadFragments(Value tile,
                                                        ValueRange prefix,
                                                        Value row, Value column,
                                                        bool transpose) {
  SmallVector<Value> indices(prefix);
  indices.push_back(row);
  indices.push_back(column);
  Value x4 = nvgpu::LdMatrixOp::create(b, loc,
                                       VectorType::get({4, 2}, cfg.elementType),
                                       tile, indices, transpose, 4);
  SmallVector<Value, 4> regs;
  for (int64_t i = 0; i < 4; ++i) {
    Value pair = vector::ExtractOp::create(b, loc, x4, i);
    Value word =
        vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair);
    regs.push_back(vector::ExtractOp::create(b, loc, word, 0));
  }
  return regs;
}

void FlashKernelEmitter::mma(ArrayRef<Value> a, ArrayRef<Value> bRegs,
                             MutableArrayRef<Value> acc) {
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                     SmallVector<Type>(4, f32));
  bool bf16 = cfg.elementType.isBF16();
  NVVM::MMATypes ptxType = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  // NVVM takes bf16 pairs as b32 and f16 pairs as vector<2xf16>.
  auto operand = [&](Value reg) -> Value {
    if (bf16)
      return reg;
    Value word =
        vector::BroadcastOp::create(b, loc, VectorType::get({1}, i32), reg);
    return vector::BitCastOp::create(
        b, loc, VectorType::get({2}, cfg.elementType), word);
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

Value FlashKernelEmitter::pack(Value lo, Value hi) {
  Value pair = vector::FromElementsOp::create(b, loc, VectorType::get({2}, f32),
                                              ValueRange{lo, hi});
  Value rounded = arith::TruncFOp::create(
      b, loc, VectorType::get({2}, cfg.elementType), pair);
  Value word =
      vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), rounded);
  return vector::ExtractOp::create(b, loc, word, 0);
}

Value FlashKernelEmitter::quadReduce(Value x, bool isMax) {
  for (int32_t offset : {1, 2}) {
    Value other =
        gpu::ShuffleOp::create(b, loc, x, offset, 32, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    x = isMax ? fmax(x, other)
              : arith::AddFOp::create(b, loc, x, other).getResult();
  }
  return x;
}

void FlashKernelEmitter::emitKeyBlock(Value block, Value buffer, bool masked,
                                      MutableArrayRef<Value> state) {
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim, bc = cfg.keyBlock;
  int64_t keyTiles = bc / 8;
  Value zeroF = f32c(0.0);

  // S = Q K^T: per 16-key pair of n-tiles, one ldmatrix x4 of K per 16 dims.
  SmallVector<Value> s(keyTiles * 4, zeroF);
  for (int64_t kk = 0; kk < d / 16; ++kk) {
    SmallVector<Value, 4> a =
        cfg.queryInRegisters() ? queryFragments[kk] : loadQueryFragment(kk);
    for (int64_t np = 0; np < bc / 16; ++np) {
      SmallVector<Value, 4> kf =
          loadFragments(kTiles, {buffer}, add(laneRowB, 16 * np),
                        fragmentColumn(add(laneChunkB, 2 * kk)), false);
      mma(a, {kf[0], kf[1]}, MutableArrayRef<Value>(s).slice(8 * np, 4));
      mma(a, {kf[2], kf[3]}, MutableArrayRef<Value>(s).slice(8 * np + 4, 4));
    }
  }

  // Scores in the log2 domain; masked keys (past Skv, or above the causal
  // diagonal: key > row + Skv - Sq) become -inf.
  double negInf = -std::numeric_limits<double>::infinity();
  Value scaleLog2 = f32c(cfg.scale * M_LOG2E);
  Value ninf = f32c(negInf);
  Value keyBase = add(mul(block, bc), mul(quadCol, 2));
  SmallVector<Value, 2> limits;
  if (masked) {
    for (int64_t i = 0; i < 2; ++i) {
      Value limit = numKeys;
      if (cfg.causal) {
        Value row = add(add(warpRow, quadRow), 8 * i);
        Value end =
            add(add(row, arith::SubIOp::create(b, loc, numKeys, numRows)), 1);
        limit = arith::MinSIOp::create(b, loc, end, numKeys);
      }
      limits.push_back(limit);
    }
  }
  for (int64_t nt = 0; nt < keyTiles; ++nt)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t c = 0; c < 2; ++c) {
        Value &x = s[nt * 4 + i * 2 + c];
        x = arith::MulFOp::create(b, loc, x, scaleLog2);
        if (masked) {
          Value key = add(keyBase, nt * 8 + c);
          x = select(lt(key, limits[i]), x, ninf);
        }
      }

  // Online softmax per row (i = 0: row g, i = 1: row g + 8). The row sums
  // stay per-lane partial sums; the quad reduces them once, at the end.
  int64_t outTiles = dv / 8;
  for (int64_t i = 0; i < 2; ++i) {
    Value rowMax = ninf;
    for (int64_t nt = 0; nt < keyTiles; ++nt)
      for (int64_t c = 0; c < 2; ++c)
        rowMax = fmax(rowMax, s[nt * 4 + i * 2 + c]);
    rowMax = quadReduce(rowMax, /*isMax=*/true);
    Value &m = state[i];
    Value &l = state[2 + i];
    Value mNew = fmax(m, rowMax);
    // A row with no visible key so far keeps m = -inf; subtract 0 then, so
    // that exp2(-inf - -inf) never happens.
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew, ninf);
    Value mUse = select(empty, zeroF, mNew);
    Value alpha =
        math::Exp2Op::create(b, loc, arith::SubFOp::create(b, loc, m, mUse));
    Value rowSum = zeroF;
    for (int64_t nt = 0; nt < keyTiles; ++nt)
      for (int64_t c = 0; c < 2; ++c) {
        Value &x = s[nt * 4 + i * 2 + c];
        x = math::Exp2Op::create(b, loc,
                                 arith::SubFOp::create(b, loc, x, mUse));
        rowSum = arith::AddFOp::create(b, loc, rowSum, x);
      }
    l = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, l, alpha),
                              rowSum);
    m = mNew;
    for (int64_t nt = 0; nt < outTiles; ++nt)
      for (int64_t c = 0; c < 2; ++c) {
        Value &o = state[4 + nt * 4 + i * 2 + c];
        o = arith::MulFOp::create(b, loc, o, alpha);
      }
  }

  // O += P V: the score registers of key tiles 2kk, 2kk+1 are the A
  // fragment of key chunk kk; V fragments come transposed from ldmatrix.
  MutableArrayRef<Value> o = state.drop_front(4);
  for (int64_t kk = 0; kk < bc / 16; ++kk) {
    auto tile = [&](int64_t nt, int64_t i, int64_t c) {
      return s[nt * 4 + i * 2 + c];
    };
    SmallVector<Value, 4> a = {
        pack(tile(2 * kk, 0, 0), tile(2 * kk, 0, 1)),
        pack(tile(2 * kk, 1, 0), tile(2 * kk, 1, 1)),
        pack(tile(2 * kk + 1, 0, 0), tile(2 * kk + 1, 0, 1)),
        pack(tile(2 * kk + 1, 1, 0), tile(2 * kk + 1, 1, 1))};
    for (int64_t dp = 0; dp < dv / 16; ++dp) {
      SmallVector<Value, 4> vf =
          loadFragments(vTiles, {buffer}, add(laneRowA, 16 * kk),
                        fragmentColumn(add(laneChunkA, 2 * dp)), true);
      mma(a, {vf[0], vf[1]}, o.slice(8 * dp, 4));
      mma(a, {vf[2], vf[3]}, o.slice(8 * dp + 4, 4));
    }
  }
}

/// The epilogue's column pairs start at even columns of rows of even
/// length: 4-byte aligned in buffers that are (cp.async already needs 16),
/// so each pair is one 32-bit access rather than two 16-bit ones.
static const llvm::Align kPairAlignment(4);

void FlashKernelEmitter::emitEpilogue(ArrayRef<Value> state) {
  int64_t dv = cfg.valueHeadDim;
  bool headwise = cfg.hasGate && cfg.gateWidth == 1;
  auto gateFn = cast<GateFunctionAttrInterface>(cfg.gate);
  Value zeroF = f32c(0.0);
  auto pairType = VectorType::get({2}, cfg.elementType);
  for (int64_t i = 0; i < 2; ++i) {
    // 1 / l, or 0 for a row without a visible key.
    Value l = quadReduce(state[2 + i], /*isMax=*/false);
    Value inv = buildInverseRowSum(b, loc, l);
    Value row = add(add(warpRow, quadRow), 8 * i);
    auto ifOp = scf::IfOp::create(b, loc, lt(row, numRows));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value headwiseGate;
    if (headwise) {
      Value x = memref::LoadOp::create(b, loc, g, add(gBase, row));
      headwiseGate =
          gateFn.buildActivation(b, loc, arith::ExtFOp::create(b, loc, f32, x));
    }
    // All of the row's gate loads first (one register per column pair):
    // interleaved with the stores to `out`, which may alias `g` as far as
    // LLVM knows, each load's latency would be exposed in turn.
    SmallVector<Value> gatePairs;
    if (cfg.hasGate && !headwise)
      for (int64_t nt = 0; nt < dv / 8; ++nt) {
        Value col = add(mul(quadCol, 2), nt * 8);
        Value gi = add(add(gBase, mul(row, dv)), col);
        gatePairs.push_back(
            vector::LoadOp::create(b, loc, pairType, g, ValueRange{gi},
                                   /*nontemporal=*/false, kPairAlignment));
      }
    for (int64_t nt = 0; nt < dv / 8; ++nt) {
      Value col = add(mul(quadCol, 2), nt * 8);
      // The activated gate of this lane's two output columns.
      SmallVector<Value, 2> gates;
      if (headwise) {
        gates = {headwiseGate, headwiseGate};
      } else if (cfg.hasGate) {
        Value pair = arith::ExtFOp::create(b, loc, VectorType::get({2}, f32),
                                           gatePairs[nt]);
        for (int64_t c = 0; c < 2; ++c)
          gates.push_back(gateFn.buildActivation(
              b, loc, vector::ExtractOp::create(b, loc, pair, c)));
      }
      SmallVector<Value, 2> y;
      for (int64_t c = 0; c < 2; ++c) {
        Value yc =
            arith::MulFOp::create(b, loc, state[4 + nt * 4 + i * 2 + c], inv);
        y.push_back(
            cfg.hasGate ? buildCombine(b, loc, cfg.combine, yc, gates[c]) : yc);
      }
      Value packed = arith::TruncFOp::create(
          b, loc, pairType,
          vector::FromElementsOp::create(b, loc, VectorType::get({2}, f32), y));
      vector::StoreOp::create(b, loc, packed, out,
                              ValueRange{add(add(oBase, mul(row, dv)), col)},
                              /*nontemporal=*/false, kPairAlignment);
    }
  }
}

void FlashKernelEmitter::emit(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  q = entry.getArgument(0);
  k = entry.getArgument(1);
  v = entry.getArgument(2);
  g = entry.getArgument(3);
  out = entry.getArgument(4);
  numRows = entry.getArgument(5);
  numKeys = entry.getArgument(6);

  int64_t d = cfg.headDim, dv = cfg.valueHeadDim, bc = cfg.keyBlock;
  int64_t br = cfg.queryBlock();
  // XOR the 16-byte chunk index with the row's low bits: as many bits as
  // the chunks of the narrowest tile row allow (8 rows = 8 distinct chunks).
  int64_t chunks = std::min(d, dv) / 8;
  swizzleMask = std::min<int64_t>(chunks & -chunks, 8) - 1;

  // Lanes: quad row g = lane / 4 and column t = lane % 4 of the fragments;
  // ldmatrix row addresses: lane / 8 picks the 8x8 matrix, lane % 8 its row.
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  quadRow = arith::DivUIOp::create(b, loc, lane, idx(4));
  quadCol = arith::RemUIOp::create(b, loc, lane, idx(4));
  Value matrix = arith::DivUIOp::create(b, loc, lane, idx(8));
  Value row8 = arith::RemUIOp::create(b, loc, lane, idx(8));
  Value matrixLow = arith::RemUIOp::create(b, loc, matrix, idx(2));
  Value matrixHigh = arith::DivUIOp::create(b, loc, matrix, idx(2));
  // A (and V^T): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
  // (rows 0-7, k 8-15), (rows 8-15, k 8-15).
  laneRowA = add(mul(matrixLow, 8), row8);
  laneChunkA = matrixHigh;
  // K as B: (keys 0-7, k 0-7), (keys 0-7, k 8-15), (keys 8-15, k 0-7), ...
  laneRowB = add(mul(matrixHigh, 8), row8);
  laneChunkB = matrixLow;
  laneSwizzle = swizzleBits(row8);

  // Heavy causal blocks (most keys) are scheduled first.
  Value gridX = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value blockX = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value queryBlock = arith::SubIOp::create(
      b, loc, arith::SubIOp::create(b, loc, gridX, idx(1)), blockX);
  head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  rowBase = mul(queryBlock, br);
  warpTileRow = mul(warp, 16);
  warpRow = add(rowBase, warpTileRow);
  Value kvHead = arith::DivUIOp::create(
      b, loc, head, idx(cfg.numQueryHeads / cfg.numKeyValueHeads));
  Value gateHead = cfg.numGateHeads == 1 ? idx(0) : head;
  auto slab = [&](Value h, int64_t heads, Value len, int64_t width) {
    return mul(mul(add(mul(batch, heads), h), len), width);
  };
  qBase = slab(head, cfg.numQueryHeads, numRows, d);
  kBase = slab(kvHead, cfg.numKeyValueHeads, numKeys, d);
  vBase = slab(kvHead, cfg.numKeyValueHeads, numKeys, dv);
  gBase = slab(gateHead, cfg.numGateHeads, numRows, cfg.gateWidth);
  oBase = slab(head, cfg.numQueryHeads, numRows, dv);

  // Shared memory: Q, K[2], V[2].
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto i8 = b.getI8Type();
  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, i8, AffineMap(), wg));
  auto view = [&](int64_t offset, ArrayRef<int64_t> shape) {
    return memref::ViewOp::create(
        b, loc, MemRefType::get(shape, cfg.elementType, AffineMap(), wg), smem,
        idx(offset), ValueRange{});
  };
  qTile = view(0, {br, d});
  kTiles = view(cfg.queryTileBytes(), {2, bc, d});
  vTiles = view(cfg.queryTileBytes() + 2 * cfg.keyTileBytes(), {2, bc, dv});

  // Key blocks [0, end): under the causal mask the rows of this block see
  // keys up to q0 + Br - 1 + Skv - Sq; blocks past that are never visited.
  Value zero = idx(0), one = idx(1);
  Value keyEnd = numKeys;
  Value delta = arith::SubIOp::create(b, loc, numKeys, numRows);
  if (cfg.causal) {
    Value end = add(add(rowBase, br), delta);
    keyEnd = arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, end, zero), numKeys);
  }
  Value numBlocks = arith::CeilDivSIOp::create(b, loc, keyEnd, idx(bc));
  // Blocks that end at or before this bound need no mask: every key exists
  // and (causal) is visible to the first row of the block.
  Value unmaskedEnd = numKeys;
  if (cfg.causal)
    unmaskedEnd =
        arith::MinSIOp::create(b, loc, add(add(rowBase, 1), delta), numKeys);

  // Prologue: Q and block 0 in one cp.async group.
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  auto commit = [&](SmallVectorImpl<Value> &tokens) {
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType, tokens)
        .getResult();
  };
  auto copyKeyBlock = [&](Value blockIndex, Value buffer, Value limit,
                          SmallVectorImpl<Value> &tokens) {
    Value key0 = mul(blockIndex, bc);
    copyTile(k, kBase, key0, limit, kTiles, {buffer}, bc, d, tokens);
    copyTile(v, vBase, key0, limit, vTiles, {buffer}, bc, dv, tokens);
  };
  SmallVector<Value> tokens;
  copyTile(q, qBase, rowBase, numRows, qTile, {}, br, d, tokens);
  copyKeyBlock(zero, zero, numKeys, tokens);
  Value group = commit(tokens);
  if (cfg.queryInRegisters()) {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(0));
    gpu::BarrierOp::create(b, loc);
    for (int64_t kk = 0; kk < d / 16; ++kk)
      queryFragments.push_back(loadQueryFragment(kk));
  }

  double negInf = -std::numeric_limits<double>::infinity();
  SmallVector<Value> init = {f32c(negInf), f32c(negInf), f32c(0.0), f32c(0.0)};
  init.append(dv / 8 * 4, f32c(0.0));
  auto loop = scf::ForOp::create(b, loc, zero, numBlocks, one, init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    Value buffer = arith::AndIOp::create(b, loc, j, one);
    // Everyone is done with block j - 1's buffer: refill it with block
    // j + 1 (zero-filled past the last block), then wait for block j.
    gpu::BarrierOp::create(b, loc);
    Value next = add(j, 1);
    Value nextLimit = select(lt(next, numBlocks), numKeys, zero);
    SmallVector<Value> nextTokens;
    copyKeyBlock(next, arith::XOrIOp::create(b, loc, buffer, one), nextLimit,
                 nextTokens);
    Value nextGroup = commit(nextTokens);
    nvgpu::DeviceAsyncWaitOp::create(b, loc, nextGroup, b.getI32IntegerAttr(1));
    gpu::BarrierOp::create(b, loc);

    Value masked = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                         mul(add(j, 1), bc), unmaskedEnd);
    SmallVector<Type> types(init.size(), f32);
    auto ifOp = scf::IfOp::create(b, loc, types, masked, true);
    for (bool isMasked : {true, false}) {
      OpBuilder::InsertionGuard guard2(b);
      b.setInsertionPointToStart(isMasked ? ifOp.thenBlock()
                                          : ifOp.elseBlock());
      SmallVector<Value> state(loop.getRegionIterArgs());
      emitKeyBlock(j, buffer, isMasked, state);
      scf::YieldOp::create(b, loc, state);
    }
    scf::YieldOp::create(b, loc, ifOp.getResults());
  }
  SmallVector<Value> state(loop.getResults());
  emitEpilogue(state);
  gpu::ReturnOp::create(b, loc);
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// The launch description of a kernel, as JSON: what a runner outside MLIR
/// needs to call the PTX.
static std::string describeLaunch(const FlashKernelConfig &cfg,
                                  StringRef name) {
  llvm::json::Array args;
  auto buffer = [&](StringRef name, StringRef shape) {
    args.push_back(llvm::json::Object{{"name", name},
                                      {"kind", "memref"},
                                      {"element_type", cfg.typeName()},
                                      {"shape", shape}});
  };
  buffer("q", "B x Hq x Sq x D");
  buffer("k", "B x Hkv x Skv x D");
  buffer("v", "B x Hkv x Skv x Dv");
  buffer("gate", cfg.gateWidth == 1 ? "B x Hg x Sq x 1" : "B x Hg x Sq x Dv");
  buffer("out", "B x Hq x Sq x Dv");
  args.push_back(llvm::json::Object{{"name", "Sq"}, {"kind", "index"}});
  args.push_back(llvm::json::Object{{"name", "Skv"}, {"kind", "index"}});
  llvm::json::Object desc{
      {"module", name},
      {"kernel", name},
      {"element_type", cfg.typeName()},
      {"Hq", cfg.numQueryHeads},
      {"Hkv", cfg.numKeyValueHeads},
      {"Hg", cfg.numGateHeads},
      {"D", cfg.headDim},
      {"Dv", cfg.valueHeadDim},
      {"gate_width", cfg.gateWidth},
      {"causal", cfg.causal},
      {"gated", cfg.hasGate},
      {"rows_per_block", cfg.queryBlock()},
      {"key_block", cfg.keyBlock},
      {"grid",
       llvm::json::Array{
           llvm::formatv("ceildiv(Sq, {0})", cfg.queryBlock()).str(), "Hq",
           "B"}},
      {"block", llvm::json::Array{cfg.threads(), 1, 1}},
      {"dynamic_shared_memory", cfg.sharedMemoryBytes()},
      {"calling_convention",
       "each memref<?xT> argument is passed as (allocated ptr, aligned ptr, "
       "i64 offset, i64 size, i64 stride), the aligned pointer 16-byte "
       "aligned; index arguments as i64"},
      {"arguments", std::move(args)}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(desc));
  return s;
}

/// Returns the kernel for `cfg` in `module`, emitting it the first time.
static gpu::GPUFuncOp
getOrCreateKernel(ModuleOp module, const FlashKernelConfig &cfg, Location loc) {
  MLIRContext *ctx = module.getContext();
  std::string key = cfg.uniqueKey();
  std::string name = cfg.baseName();
  SymbolTable symbols(module);
  for (int n = 1;; ++n) {
    auto existing = symbols.lookup<gpu::GPUModuleOp>(name);
    if (!existing)
      break;
    auto func = existing.lookupSymbol<gpu::GPUFuncOp>(name);
    auto stamped = existing->getAttrOfType<StringAttr>("gated_attention.key");
    if (func && stamped && stamped.getValue() == key)
      return func;
    name = cfg.baseName() + "_" + std::to_string(n);
  }

  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, loc, name);
  gpuModule->setAttr("gated_attention.key", b.getStringAttr(key));
  symbols.insert(gpuModule);
  b.setInsertionPointToStart(gpuModule.getBody());
  auto buffer = MemRefType::get({ShapedType::kDynamic}, cfg.elementType);
  auto index = b.getIndexType();
  auto func = gpu::GPUFuncOp::create(
      b, loc, name,
      b.getFunctionType({buffer, buffer, buffer, buffer, buffer, index, index},
                        {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(cfg.threads()), 1, 1}));
  // The description goes on the builtin.module, the one place that keeps
  // it through serialization (gpu.binary keeps no attributes).
  StringAttr launch = b.getStringAttr(describeLaunch(cfg, name));
  NamedAttrList kernels;
  if (auto existing =
          module->getAttrOfType<DictionaryAttr>("gated_attention.kernels"))
    kernels.append(existing.getValue());
  kernels.set(name, launch);
  module->setAttr("gated_attention.kernels", kernels.getDictionary(ctx));
  FlashKernelEmitter(b, loc, cfg).emit(func);
  return func;
}

namespace {
struct AttentionToNVGPU : OpRewritePattern<AttentionOp> {
  AttentionToNVGPU(MLIRContext *ctx, int64_t warps, int64_t keyBlock,
                   int64_t maxSharedMemory)
      : OpRewritePattern(ctx), warps(warps), keyBlock(keyBlock),
        maxSharedMemory(maxSharedMemory) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    std::string reason = unsupportedReason(op);
    if (!reason.empty())
      return rewriter.notifyMatchFailure(op, reason);
    auto [numWarps, numKeysPerBlock] = chooseTiles(op, warps, keyBlock);
    reason = tileError(op, numWarps, numKeysPerBlock, maxSharedMemory);
    if (!reason.empty())
      return rewriter.notifyMatchFailure(op, reason);
    auto module = op->getParentOfType<ModuleOp>();
    if (!module)
      return rewriter.notifyMatchFailure(op, "not inside a builtin.module");

    FlashKernelConfig cfg;
    cfg.elementType = op.getQueryType().getElementType();
    cfg.numQueryHeads = op.getNumQueryHeads();
    cfg.numKeyValueHeads = op.getKeyType().getDimSize(1);
    cfg.numGateHeads = op.hasGate() ? op.getGateType().getDimSize(1) : 1;
    cfg.gateWidth = op.hasGate() ? op.getGateType().getDimSize(3) : 1;
    cfg.headDim = op.getHeadDim();
    cfg.valueHeadDim = op.getValueHeadDim();
    cfg.causal = op.getCausal();
    cfg.scale = op.getScaleValue();
    cfg.gate = op.getGateAttr();
    cfg.combine = op.getCombine();
    cfg.warps = numWarps;
    cfg.keyBlock = numKeysPerBlock;
    cfg.hasGate = op.hasGate();
    Location loc = op.getLoc();
    gpu::GPUFuncOp kernel = getOrCreateKernel(module, cfg, loc);

    // Buffers, flattened to the kernel's memref<?xT>.
    auto flatten = [&](Value buf) -> Value {
      Value collapsed = memref::CollapseShapeOp::create(
          rewriter, loc, buf, SmallVector<ReassociationIndices>{{0, 1, 2, 3}});
      auto type = MemRefType::get({ShapedType::kDynamic}, cfg.elementType);
      if (collapsed.getType() == type)
        return collapsed;
      return memref::CastOp::create(rewriter, loc, type, collapsed);
    };
    auto flat = [&](Value tensor, bool readOnly) {
      auto type = cast<RankedTensorType>(tensor.getType());
      return flatten(bufferization::ToBufferOp::create(
          rewriter, loc,
          MemRefType::get(type.getShape(), type.getElementType()), tensor,
          readOnly));
    };
    auto dim = [&](Value tensor, int64_t i) -> Value {
      return tensor::DimOp::create(rewriter, loc, tensor, i);
    };
    Value numBatches = dim(op.getQuery(), 0);
    Value numRows = dim(op.getQuery(), 2);
    Value numKeys = dim(op.getKey(), 2);
    RankedTensorType resultType = op.getResultType();
    Value outBuffer = allocateResultBuffer(rewriter, op, numBatches, numRows);
    Value outFlat = flatten(outBuffer);
    SmallVector<Value> args = {
        flat(op.getQuery(), true), flat(op.getKey(), true),
        flat(op.getValue(), true),
        // Without a gate the kernel never reads
        // its gate argument: pass the query.
        flat(op.hasGate() ? op.getGateInput() : op.getQuery(), true), outFlat,
        numRows, numKeys};

    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    Value gridX =
        arith::CeilDivUIOp::create(rewriter, loc, numRows, c(cfg.queryBlock()));
    // CUDA rejects empty grids: launch only when there is a row to compute.
    Value nonEmpty = arith::AndIOp::create(
        rewriter, loc,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt, gridX,
                              c(0)),
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt,
                              numBatches, c(0)));
    auto ifOp = scf::IfOp::create(rewriter, loc, nonEmpty);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifOp.thenBlock());
      Value smem = arith::ConstantOp::create(
          rewriter, loc, rewriter.getI32IntegerAttr(cfg.sharedMemoryBytes()));
      gpu::LaunchFuncOp::create(
          rewriter, loc, kernel,
          gpu::KernelDim3{gridX, c(cfg.numQueryHeads), numBatches},
          gpu::KernelDim3{c(cfg.threads()), c(1), c(1)}, smem, args);
    }
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, resultType, outBuffer,
                               /*restrict=*/true, /*writable=*/true));
    return success();
  }

  int64_t warps, keyBlock, maxSharedMemory;
};

struct ConvertGatedAttentionToNVGPUPass
    : gated_attention::impl::ConvertGatedAttentionToNVGPUPassBase<
          ConvertGatedAttentionToNVGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    const NVGPUChip *target = lookupNVGPUChip(chip);
    if (!target) {
      getOperation()->emitError()
          << "unknown chip '" << chip << "'; expected " << supportedChipList();
      return signalPassFailure();
    }
    // Tiles the user chose must fit every op the kernel covers: falling back
    // to the SIMT kernel would silently ignore them.
    bool fits = true;
    getOperation()->walk([&](AttentionOp op) {
      if (!unsupportedReason(op).empty())
        return;
      // The grid is (row blocks, Hq, B); CUDA caps its y and z at 65535.
      int64_t batch = op.getQueryType().getDimSize(0);
      if (op.getNumQueryHeads() > kMaxGridYZ || batch > kMaxGridYZ) {
        op.emitError() << "tensor-core kernel: Hq = " << op.getNumQueryHeads()
                       << " and B = " << printSize(batch) << " must be at most "
                       << kMaxGridYZ << " (CUDA's grid y and z limit)";
        fits = false;
        return;
      }
      auto [numWarps, numKeysPerBlock] = chooseTiles(op, warps, keyBlock);
      std::string error = tileError(op, numWarps, numKeysPerBlock,
                                    target->maxSharedMemoryPerBlock);
      if (!error.empty()) {
        op.emitError() << "tensor-core kernel for " << chip << ": " << error;
        fits = false;
      }
    });
    if (!fits)
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateGatedAttentionToNVGPUPatterns(patterns, warps, keyBlock,
                                          target->maxSharedMemoryPerBlock);
    // Ops the kernel does not cover (f32, odd head dims) are left for the
    // SIMT lowering.
    SmallVector<Operation *> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    (void)applyOpPatternsGreedily(ops, std::move(patterns), config);
  }
};
} // namespace

void mlir::gated_attention::populateGatedAttentionToNVGPUPatterns(
    RewritePatternSet &patterns, int64_t warps, int64_t keyBlock,
    int64_t maxSharedMemory) {
  patterns.add<AttentionToNVGPU>(patterns.getContext(), warps, keyBlock,
                                 maxSharedMemory);
}
