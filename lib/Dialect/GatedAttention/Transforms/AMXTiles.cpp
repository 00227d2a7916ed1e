//===- AMXTiles.cpp - bf16 pair contractions on AMX tiles -----------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// gated-attention-amx-tiles: the bufferized pair contractions that
// gated-attention-vectorize-tiles leaves under matrix-units=amx become AMX
// tile products. Upstream's convert-vector-to-amx turns one vector.contract
// into one tile product, storing and reloading its accumulator around each;
// here the accumulators stay in tile registers over the whole reduction.
//
//===----------------------------------------------------------------------===//

#include "AMXPermission.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "MatrixUnits.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONAMXTILESPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
/// A (rows, pairs, 2) buffer as (rows, 2 * pairs): a tile row is a run of
/// consecutive pairs. Null when the pairs of a row are not contiguous.
Value collapsePairs(OpBuilder &b, Location loc, Value pairs) {
  SmallVector<ReassociationIndices> rows = {{0}, {1, 2}};
  if (!memref::CollapseShapeOp::isGuaranteedCollapsible(
          cast<MemRefType>(pairs.getType()), rows))
    return nullptr;
  return memref::CollapseShapeOp::create(b, loc, pairs, rows);
}

/// Offsets of the tiles of `size` along a range of `range`, `perGroup` at a
/// time.
SmallVector<SmallVector<int64_t>> tileGroups(int64_t range, int64_t size,
                                             int64_t perGroup) {
  SmallVector<SmallVector<int64_t>> groups;
  for (int64_t start = 0; start < range; start += perGroup * size) {
    groups.emplace_back();
    for (int64_t t = start; t < std::min(range, start + perGroup * size);
         t += size)
      groups.back().push_back(t);
  }
  return groups;
}

/// Emits a bufferized pair contraction (left R x P x 2, right P x C x 2 of
/// bf16, accumulator R x C of f32) as amx ops: accumulator tiles of up to
/// 16 x 16, 2 x 2 at a time (with 2 left and 2 right operand tiles, the 8
/// tile registers), each loaded once (zeroed where the contraction starts
/// from zero, startAMXTilesFromZero), multiplied over all P pairs in steps
/// of up to 16 (a 64-byte row), stored once.
LogicalResult emitAMXTiles(OpBuilder &b, linalg::GenericOp op) {
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  Value lhs = collapsePairs(b, loc, op.getDpsInputOperand(0)->get());
  Value rhs = collapsePairs(b, loc, op.getDpsInputOperand(1)->get());
  if (!lhs || !rhs)
    return op.emitError("AMX tiles need the pairs of each operand row "
                        "contiguous in memory");
  Value acc = op.getDpsInitOperand(0)->get();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = ranges[0], cols = ranges[1], pairs = ranges[2];
  int64_t tileRows = largestDivisorAtMost(rows, kAMXRows);
  int64_t tileCols = largestDivisorAtMost(cols, kAMXColumns);
  int64_t tilePairs = largestDivisorAtMost(pairs, kAMXPairs);
  Type element = cast<MemRefType>(lhs.getType()).getElementType();
  auto lhsTile = amx::TileType::get({tileRows, 2 * tilePairs}, element);
  auto rhsTile = amx::TileType::get({tilePairs, 2 * tileCols}, element);
  auto accTile = amx::TileType::get({tileRows, tileCols}, b.getF32Type());
  auto index = [&](int64_t i) -> Value {
    return arith::ConstantIndexOp::create(b, loc, i);
  };
  bool fromZero = startsAMXTilesFromZero(op);
  for (ArrayRef<int64_t> rowGroup : tileGroups(rows, tileRows, 2)) {
    for (ArrayRef<int64_t> colGroup : tileGroups(cols, tileCols, 2)) {
      SmallVector<Value> sums;
      for (int64_t r : rowGroup)
        for (int64_t c : colGroup)
          sums.push_back(
              fromZero
                  ? Value(amx::TileZeroOp::create(b, loc, accTile))
                  : Value(amx::TileLoadOp::create(
                        b, loc, accTile, acc, ValueRange{index(r), index(c)})));
      for (int64_t p = 0; p < pairs; p += tilePairs) {
        SmallVector<Value> left, right;
        for (int64_t r : rowGroup)
          left.push_back(amx::TileLoadOp::create(
              b, loc, lhsTile, lhs, ValueRange{index(r), index(2 * p)}));
        for (int64_t c : colGroup)
          right.push_back(amx::TileLoadOp::create(
              b, loc, rhsTile, rhs, ValueRange{index(p), index(2 * c)}));
        for (auto [i, a] : llvm::enumerate(left))
          for (auto [j, x] : llvm::enumerate(right)) {
            Value &sum = sums[i * right.size() + j];
            sum = amx::TileMulFOp::create(b, loc, accTile, a, x, sum);
          }
      }
      for (auto [i, r] : llvm::enumerate(rowGroup))
        for (auto [j, c] : llvm::enumerate(colGroup))
          amx::TileStoreOp::create(b, loc, acc, ValueRange{index(r), index(c)},
                                   sums[i * colGroup.size() + j]);
    }
  }
  op.erase();
  return success();
}

/// The maps packBF16Pairs gives a pair contraction: left (m, k/2, 2),
/// right (k/2, n, 2), accumulator (m, n).
bool hasPairMaps(linalg::GenericOp op) {
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n, k, pair;
  bindDims(ctx, m, n, k, pair);
  return op.getIndexingMapsArray() ==
         SmallVector<AffineMap>{AffineMap::get(4, 0, {m, k, pair}, ctx),
                                AffineMap::get(4, 0, {k, n, pair}, ctx),
                                AffineMap::get(4, 0, {m, n}, ctx)};
}

struct GatedAttentionAMXTilesPass
    : gated_attention::impl::GatedAttentionAMXTilesPassBase<
          GatedAttentionAMXTilesPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> contractions;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op.hasPureBufferSemantics() && isPairContraction(op))
        contractions.push_back(op);
    });
    OpBuilder b(&getContext());
    for (linalg::GenericOp op : contractions) {
      if (!hasPairMaps(op) ||
          llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic)) {
        op.emitError("expected a static pair contraction of "
                     "gated-attention-vectorize-tiles (left m x k/2 x 2, "
                     "right k/2 x n x 2)");
        return signalPassFailure();
      }
      if (failed(emitAMXTiles(b, op)))
        return signalPassFailure();
    }
    if (!contractions.empty())
      addAMXPermissionRequest(getOperation());
  }
};
} // namespace
