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

/// The packed tile of an assembled block, built piece by piece from where
/// the pieces are (the cache's pages) instead of from the assembled copy:
/// a loop like the block's that inserts each packed piece. Returns the
/// loop's result and the piece's pack op.
std::pair<Value, linalg::GenericOp> packPieces(RewriterBase &rewriter,
                                               AssembledBlock block,
                                               ArrayRef<int64_t> packedShape,
                                               bool transposed) {
  scf::ForOp old = block.loop;
  tensor::InsertSliceOp insert = block.insert;
  Location loc = old.getLoc();
  rewriter.setInsertionPointAfter(old);
  Type f32 = rewriter.getF32Type();
  Value init = tensor::EmptyOp::create(rewriter, loc, packedShape, f32);
  if (block.zeroFilled)
    init = linalg::FillOp::create(rewriter, loc,
                                  arith::ConstantOp::create(
                                      rewriter, loc, rewriter.getZeroAttr(f32))
                                      .getResult(),
                                  init)
               .getResult(0);
  linalg::GenericOp piecePack;
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
        piecePack = emitPack(b, l, map.lookup(insert.getSource()), transposed);
        OpFoldResult start = insert.getMixedOffsets()[0];
        if (auto v = dyn_cast<Value>(start))
          start = map.lookupOrDefault(v);
        ArrayRef<int64_t> pieceShape =
            cast<RankedTensorType>(piecePack.getResultTypes()[0]).getShape();
        OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
        SmallVector<OpFoldResult> offsets =
            transposed ? SmallVector<OpFoldResult>{zero, start}
                       : SmallVector<OpFoldResult>{start, zero};
        Value into = tensor::InsertSliceOp::create(
            b, l, piecePack.getResult(0), iters[0], offsets,
            getAsIndexOpFoldResult(b.getContext(), pieceShape), {one, one});
        scf::YieldOp::create(b, l, into);
      });
  return {loop.getResult(0), piecePack};
}

/// Makes `use` (an input of a linalg.generic) read `packed`, the f32 copy
/// of the same (k, n) values, where it can: an f32 input as it is; a bf16
/// one whose body only takes its bits (max|v| compares bf16 values on their
/// 16 bits) from the f32's high half, which are those bits (the widening
/// is exact).
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
    std::tie(packed, pack) = packPieces(rewriter, *block, shape, transposed);
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
