//===- PackOperands.cpp - operands packed for register tiles --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "PackOperands.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <optional>

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
using utils::IteratorType;

/// `src` (rows x cols) as an f32 tile, transposed when `transposed`, by a
/// linalg.generic (vectorized later as 16 x 16 shuffles or rows).
linalg::GenericOp emitPack(OpBuilder &b, Location loc, Value src,
                           bool transposed) {
  MLIRContext *ctx = b.getContext();
  AffineExpr r, c;
  bindDims(ctx, r, c);
  SmallVector<int64_t> shape =
      llvm::to_vector(cast<RankedTensorType>(src.getType()).getShape());
  if (transposed)
    std::swap(shape[0], shape[1]);
  Type f32 = b.getF32Type();
  Value init = tensor::EmptyOp::create(b, loc, shape, f32);
  AffineMap readMap = transposed ? AffineMap::get(2, 0, {c, r}, ctx)
                                 : AffineMap::get(2, 0, {r, c}, ctx);
  return linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{src}, ValueRange{init},
      ArrayRef<AffineMap>{readMap, AffineMap::get(2, 0, {r, c}, ctx)},
      ArrayRef<IteratorType>{IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value x = args[0];
        if (x.getType() != f32)
          x = arith::ExtFOp::create(nb, l, f32, x);
        linalg::YieldOp::create(nb, l, x);
      });
}

/// `src` as bf16 pairs (k/2, n, 2) of the reduction dimension k, from
/// (n, k) keys when `transposed`, else (k, n) values, by a linalg.generic
/// (emitPairPack's copy) into `init` (a new tensor if null).
linalg::GenericOp emitPairCopy(OpBuilder &b, Location loc, Value src,
                               bool transposed, Value init = nullptr) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(src.getType());
  Type bf16 = type.getElementType();
  int64_t k = type.getDimSize(transposed ? 1 : 0);
  int64_t n = type.getDimSize(transposed ? 0 : 1);
  Value split = tensor::ExpandShapeOp::create(
      b, loc,
      transposed ? RankedTensorType::get({n, k / 2, 2}, bf16)
                 : RankedTensorType::get({k / 2, 2, n}, bf16),
      src,
      transposed ? ArrayRef<ReassociationIndices>{{0}, {1, 2}}
                 : ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  AffineExpr p, c, i;
  bindDims(ctx, p, c, i);
  if (!init)
    init =
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{k / 2, n, 2}, bf16);
  AffineMap readMap = transposed ? AffineMap::get(3, 0, {c, p, i}, ctx)
                                 : AffineMap::get(3, 0, {p, i, c}, ctx);
  return linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{split}, ValueRange{init},
      ArrayRef<AffineMap>{readMap, b.getMultiDimIdentityMap(3)},
      SmallVector<IteratorType>(3, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, args[0]);
      });
}

/// Pairs (p, n, 2) as their rows (p, 2n): a row holds the pairs of one
/// reduction step side by side.
Value pairRows(OpBuilder &b, Location loc, Value pairs) {
  auto type = cast<RankedTensorType>(pairs.getType());
  return tensor::CollapseShapeOp::create(
      b, loc,
      RankedTensorType::get({type.getDimSize(0), 2 * type.getDimSize(1)},
                            type.getElementType()),
      pairs, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
}

/// A block assembled from pieces, as the paged op's keysOf reads a key block
/// that spans pages: an scf.for whose one iter_arg starts as a
/// tensor.empty (or its zero fill) and whose body inserts one piece of
/// static shape at [start, 0].
struct AssembledBlock {
  scf::ForOp loop;
  tensor::InsertSliceOp insert;
  bool zeroFilled;
};

std::optional<AssembledBlock> matchAssembledBlock(Value block) {
  auto loop = block.getDefiningOp<scf::ForOp>();
  if (!loop || loop.getNumRegionIterArgs() != 1)
    return std::nullopt;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  auto insert = yield.getOperand(0).getDefiningOp<tensor::InsertSliceOp>();
  if (!insert || !insert->hasOneUse() ||
      insert.getDest() != loop.getRegionIterArg(0) ||
      !insert.getSourceType().hasStaticShape() ||
      insert.getSourceType().getRank() != 2 || !insert.hasUnitStride() ||
      !isZeroInteger(insert.getMixedOffsets()[1]))
    return std::nullopt;
  Value init = loop.getInitArgs()[0];
  bool zeroFilled = false;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    if (!matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
      return std::nullopt;
    init = fill.getOutputs()[0];
    zeroFilled = true;
  }
  if (!init.getDefiningOp<tensor::EmptyOp>())
    return std::nullopt;
  return AssembledBlock{loop, insert, zeroFilled};
}

/// Whether `start` (a piece's first row) is even: a constant, or a
/// product with an even constant (keysOf's `i * piece`).
bool isEven(OpFoldResult start) {
  if (std::optional<int64_t> c = getConstantIntValue(start))
    return *c % 2 == 0;
  auto mul = dyn_cast<Value>(start).getDefiningOp<arith::MulIOp>();
  if (!mul)
    return false;
  return llvm::any_of(mul->getOperands(), [](Value v) {
    std::optional<int64_t> c = getConstantIntValue(v);
    return c && *c % 2 == 0;
  });
}

/// The packed tile (of `packedType`) of an assembled block, built piece by
/// piece from where the pieces are (the cache's pages) instead of from the
/// assembled copy: a loop like the block's that packs each piece.
/// `packPiece` packs one piece (the value the block's loop inserts, its
/// first row `start`) into the packed tile so far and returns the tile.
Value packPieces(
    RewriterBase &rewriter, AssembledBlock block, RankedTensorType packedType,
    function_ref<Value(OpBuilder &, Location, Value, OpFoldResult, Value)>
        packPiece) {
  scf::ForOp old = block.loop;
  tensor::InsertSliceOp insert = block.insert;
  Location loc = old.getLoc();
  rewriter.setInsertionPointAfter(old);
  Type element = packedType.getElementType();
  Value init =
      tensor::EmptyOp::create(rewriter, loc, packedType.getShape(), element);
  if (block.zeroFilled)
    init =
        linalg::FillOp::create(rewriter, loc,
                               arith::ConstantOp::create(
                                   rewriter, loc, rewriter.getZeroAttr(element))
                                   .getResult(),
                               init)
            .getResult(0);
  auto loop = scf::ForOp::create(
      rewriter, loc, old.getLowerBound(), old.getUpperBound(), old.getStep(),
      ValueRange{init},
      [&](OpBuilder &b, Location l, Value iv, ValueRange iters) {
        IRMapping map;
        map.map(old.getInductionVar(), iv);
        map.map(old.getRegionIterArg(0), iters[0]);
        for (Operation &op : old.getBody()->without_terminator())
          if (&op != insert.getOperation())
            b.clone(op, map);
        OpFoldResult start = insert.getMixedOffsets()[0];
        if (auto v = dyn_cast<Value>(start))
          start = map.lookupOrDefault(v);
        scf::YieldOp::create(
            b, l,
            packPiece(b, l, map.lookup(insert.getSource()), start, iters[0]));
      });
  return loop.getResult(0);
}

/// `piece` inserted into `into` at `offsets`.
Value insertAt(OpBuilder &b, Location loc, Value piece, Value into,
               ArrayRef<OpFoldResult> offsets) {
  auto type = cast<RankedTensorType>(piece.getType());
  SmallVector<OpFoldResult> ones(type.getRank(), b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(
      b, loc, piece, into, offsets,
      getAsIndexOpFoldResult(b.getContext(), type.getShape()), ones);
}

/// Makes `use` (an input of a linalg.generic) read `packed`, the f32 copy
/// of the same (k, n) values, where it can: an f32 input as it is; a bf16
/// one whose body only takes its bits (max|v| compares bf16 values on their
/// 16 bits) from the f32's high half, which are those bits (the widening
/// is exact). (f16 has no max|v|: its range cannot overflow the sums.)
void readPackedInstead(RewriterBase &rewriter, OpOperand &use, Value packed) {
  auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!reader || !reader.isDpsInput(&use))
    return;
  Type element = getElementTypeOrSelf(use.get().getType());
  Type f32 = rewriter.getF32Type();
  if (element == f32) {
    rewriter.modifyOpInPlace(reader, [&] { use.set(packed); });
    return;
  }
  BlockArgument arg = reader.getMatchingBlockArgument(&use);
  if (!isa<BFloat16Type>(element) ||
      !llvm::all_of(arg.getUsers(), [&](Operation *user) {
        auto bits = dyn_cast<arith::BitcastOp>(user);
        return bits && bits.getType() == rewriter.getI16Type();
      }))
    return;
  rewriter.modifyOpInPlace(reader, [&] {
    use.set(packed);
    arg.setType(f32);
    SmallVector<Operation *> users(arg.getUsers());
    for (Operation *user : users) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(user);
      Location loc = user->getLoc();
      Type i32 = rewriter.getI32Type();
      Value wide = arith::BitcastOp::create(rewriter, loc, i32, arg);
      Value high = arith::ShRUIOp::create(
          rewriter, loc, wide,
          arith::ConstantIntOp::create(rewriter, loc, i32, 16));
      Value bits =
          arith::TruncIOp::create(rewriter, loc, rewriter.getI16Type(), high);
      rewriter.replaceOp(user, bits);
    }
  });
}

/// Makes `use` read `pairs`, the same (k, n) values packed as (k/2, n, 2),
/// where its reader is max|v|'s column maxima: a linalg.generic taking the
/// maximum over k of each column (from a fill), whose users each reduce
/// the n maxima whole. Read as (k/2, 2n) rows of pairs, the maxima of the
/// 2n columns (a column's even and odd keys apart) reduce to the same
/// block maximum. Modified in place (the pass holds the op).
void readPairsInstead(RewriterBase &rewriter, OpOperand &use, Value pairs) {
  auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!reader || !reader.isDpsInput(&use) || reader.getNumDpsInputs() != 1 ||
      reader.getNumDpsInits() != 1 || reader.hasIndexSemantics())
    return;
  MLIRContext *ctx = reader.getContext();
  AffineExpr k, n;
  bindDims(ctx, k, n);
  auto fill = reader.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  Block *body = reader.getBody();
  auto combine = dyn_cast_or_null<arith::MaxUIOp>(
      body->getTerminator()->getOperand(0).getDefiningOp());
  Value columns = reader.getResult(0);
  if (reader.getIndexingMapsArray() !=
          SmallVector<AffineMap>{AffineMap::get(2, 0, {k, n}, ctx),
                                 AffineMap::get(2, 0, {n}, ctx)} ||
      reader.getIteratorTypesArray() !=
          SmallVector<IteratorType>{IteratorType::reduction,
                                    IteratorType::parallel} ||
      !fill || !combine ||
      !llvm::is_contained(combine->getOperands(), body->getArgument(1)) ||
      !llvm::all_of(columns.getUsers(), [&](Operation *user) {
        auto whole = dyn_cast<linalg::GenericOp>(user);
        return whole && whole.getNumLoops() == 1 &&
               whole.getNumReductionLoops() == 1 &&
               llvm::all_of(whole.getDpsInits(),
                            [&](Value v) { return v != columns; });
      }))
    return;
  Location loc = reader.getLoc();
  rewriter.setInsertionPoint(reader);
  Value rows = pairRows(rewriter, loc, pairs);
  int64_t width = cast<RankedTensorType>(rows.getType()).getDimSize(1);
  Type bits = getElementTypeOrSelf(columns.getType());
  Value init =
      linalg::FillOp::create(
          rewriter, loc, fill.value(),
          tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{width}, bits)
              .getResult())
          .getResult(0);
  rewriter.modifyOpInPlace(reader, [&] {
    use.set(rows);
    reader.getDpsInitsMutable()[0].set(init);
    columns.setType(RankedTensorType::get({width}, bits));
  });
}

} // namespace

linalg::GenericOp mlir::gated_attention::packRhs(RewriterBase &rewriter,
                                                 linalg::GenericOp op,
                                                 bool copyF32) {
  MLIRContext *ctx = op.getContext();
  AffineExpr d1 = getAffineDimExpr(1, ctx), d2 = getAffineDimExpr(2, ctx);
  AffineMap rhsMap = op.getIndexingMapsArray()[1];
  bool transposed = rhsMap == AffineMap::get(3, 0, {d1, d2}, ctx);
  if (!transposed && rhsMap != AffineMap::get(3, 0, {d2, d1}, ctx))
    return nullptr;
  Value rhs = op.getDpsInputOperand(1)->get();
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  Type f32 = rewriter.getF32Type();
  if (!transposed && rhsType.getElementType() == f32 && !copyF32)
    return nullptr;
  SmallVector<int64_t> shape = llvm::to_vector(rhsType.getShape());
  if (transposed)
    std::swap(shape[0], shape[1]);
  Value packed;
  linalg::GenericOp pack;
  if (std::optional<AssembledBlock> block = matchAssembledBlock(rhs)) {
    packed = packPieces(
        rewriter, *block, RankedTensorType::get(shape, f32),
        [&](OpBuilder &b, Location loc, Value piece, OpFoldResult start,
            Value into) {
          pack = emitPack(b, loc, piece, transposed);
          OpFoldResult zero = b.getIndexAttr(0);
          return insertAt(b, loc, pack.getResult(0), into,
                          transposed ? SmallVector<OpFoldResult>{zero, start}
                                     : SmallVector<OpFoldResult>{start, zero});
        });
    // The same values in the same layout: max|v| reads them there, and
    // the assembled block goes.
    if (!transposed)
      for (OpOperand &use : llvm::make_early_inc_range(rhs.getUses()))
        if (use.getOwner() != op)
          readPackedInstead(rewriter, use, packed);
  } else {
    rewriter.setInsertionPoint(op);
    pack = emitPack(rewriter, op.getLoc(), rhs, transposed);
    packed = pack.getResult(0);
  }
  // The contraction now reads the packed operand as (k, n) = (d2, d1), and
  // its body sees an f32 value where it saw the original element type.
  rewriter.modifyOpInPlace(op, [&] {
    op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(
        {op.getIndexingMapsArray()[0], AffineMap::get(3, 0, {d2, d1}, ctx),
         op.getIndexingMapsArray()[2]}));
    op.getDpsInputOperand(1)->set(packed);
    BlockArgument arg = op.getBody()->getArgument(1);
    if (arg.getType() != f32) {
      arg.setType(f32);
      for (Operation *user : llvm::make_early_inc_range(arg.getUsers()))
        if (auto ext = dyn_cast<arith::ExtFOp>(user)) {
          ext.getResult().replaceAllUsesWith(arg);
          rewriter.eraseOp(ext);
        }
    }
  });
  return pack;
}

std::pair<Value, linalg::GenericOp>
mlir::gated_attention::packPairs(RewriterBase &rewriter, Location loc,
                                 Value rhs, bool transposed) {
  auto type = cast<RankedTensorType>(rhs.getType());
  int64_t k = type.getDimSize(transposed ? 1 : 0);
  int64_t n = type.getDimSize(transposed ? 0 : 1);
  std::optional<AssembledBlock> block = matchAssembledBlock(rhs);
  // Values' pieces are rows of k: whole pairs only from an even first row
  // and an even count.
  if (block && !transposed &&
      (block->insert.getSourceType().getDimSize(0) % 2 ||
       !isEven(block->insert.getMixedOffsets()[0])))
    block = std::nullopt;
  if (!block) {
    linalg::GenericOp pack = emitPairCopy(rewriter, loc, rhs, transposed);
    return {pack.getResult(0), pack};
  }
  linalg::GenericOp pack;
  // The tile is built as (k/2, 2n) rows, each piece's pairs written in
  // place into its slice of them (emitPairPack writes the op's init; a
  // (k/2, n, 2) slice written through reshapes was copied once more).
  Type bf16 = type.getElementType();
  Value packedRows = packPieces(
      rewriter, *block, RankedTensorType::get({k / 2, 2 * n}, bf16),
      [&](OpBuilder &b, Location l, Value piece, OpFoldResult start,
          Value into) {
        auto pieceType = cast<RankedTensorType>(piece.getType());
        int64_t pieceRows = pieceType.getDimSize(0);
        int64_t width = pieceType.getDimSize(1);
        Value first = getValueOrCreateConstantIndexOp(b, l, start);
        Value two = arith::ConstantIndexOp::create(b, l, 2);
        OpFoldResult zero = b.getIndexAttr(0);
        // Keys: the piece's columns; values: its rows of pairs.
        SmallVector<OpFoldResult> offsets =
            transposed
                ? SmallVector<OpFoldResult>{zero, arith::MulIOp::create(
                                                      b, l, first, two)
                                                      .getResult()}
                : SmallVector<OpFoldResult>{
                      arith::DivUIOp::create(b, l, first, two).getResult(),
                      zero};
        SmallVector<int64_t> shape =
            transposed ? SmallVector<int64_t>{width / 2, 2 * pieceRows}
                       : SmallVector<int64_t>{pieceRows / 2, 2 * width};
        SmallVector<OpFoldResult> ones(2, b.getIndexAttr(1));
        Value slot = tensor::ExtractSliceOp::create(
            b, l, into, offsets, getAsIndexOpFoldResult(b.getContext(), shape),
            ones);
        Value slotPairs = tensor::ExpandShapeOp::create(
            b, l, RankedTensorType::get({shape[0], shape[1] / 2, 2}, bf16),
            slot, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
        pack = emitPairCopy(b, l, piece, transposed, slotPairs);
        return insertAt(b, l, pairRows(b, l, pack.getResult(0)), into, offsets);
      });
  Value packed = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get({k / 2, n, 2}, bf16), packedRows,
      ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  // max|v| reads the packed pairs, and the assembled block goes.
  if (!transposed)
    for (OpOperand &use : llvm::make_early_inc_range(rhs.getUses()))
      readPairsInstead(rewriter, use, packed);
  return {packed, pack};
}
