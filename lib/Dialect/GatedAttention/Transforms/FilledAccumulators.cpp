//===- FilledAccumulators.cpp - register tiles that start from a fill -----===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "FilledAccumulators.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
constexpr StringLiteral kPrivateFill = "gated_attention.private_fill";
constexpr StringLiteral kFilledDepthLoop = "gated_attention.filled_depth_loop";
/// A loop over a register tiling's rows or columns: each iteration reads
/// and writes only its own tile of the loop's tensor, so the tile's values
/// at the start of the iteration are those of the loop's init.
constexpr StringLiteral kFilledTileLoop = "gated_attention.filled_tile_loop";

int64_t idOf(linalg::FillOp fill) {
  return cast<IntegerAttr>(fill->getAttr(kPrivateFill)).getInt();
}

/// Whether two static unit-stride slices of one tensor share no element.
bool disjoint(tensor::ExtractSliceOp a, tensor::InsertSliceOp b) {
  auto staticUnit = [](OffsetSizeAndStrideOpInterface s) {
    return !ShapedType::isDynamicShape(s.getStaticOffsets()) &&
           !ShapedType::isDynamicShape(s.getStaticSizes()) &&
           llvm::all_of(s.getStaticStrides(), [](int64_t x) { return x == 1; });
  };
  if (!staticUnit(a) || !staticUnit(b) ||
      a.getStaticOffsets().size() != b.getStaticOffsets().size())
    return false;
  for (auto [oa, sa, ob, sb] :
       llvm::zip(a.getStaticOffsets(), a.getStaticSizes(), b.getStaticOffsets(),
                 b.getStaticSizes()))
    if (oa + sa <= ob || ob + sb <= oa)
      return true;
  return false;
}

/// The private fill whose values `v` holds: `v` is the fill, or a slice of
/// it, or a slice of it that a split's other part was inserted beside
/// (not into).
linalg::FillOp privateFillOf(Value v) {
  while (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>()) {
    v = slice.getSource();
    if (auto insert = v.getDefiningOp<tensor::InsertSliceOp>()) {
      if (!disjoint(slice, insert))
        return nullptr;
      v = insert.getDest();
    }
  }
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && fill->hasAttr(kPrivateFill) ? fill : nullptr;
}
} // namespace

linalg::FillOp mlir::gated_attention::privatizeInitFill(RewriterBase &rewriter,
                                                        linalg::LinalgOp op,
                                                        int64_t id) {
  if (op.getNumDpsInits() != 1)
    return nullptr;
  OpOperand *init = op.getDpsInitOperand(0);
  auto shared = init->get().getDefiningOp<linalg::FillOp>();
  auto type = dyn_cast<RankedTensorType>(init->get().getType());
  // The tiles start from the value itself: a fill that converts it (to
  // another element type) is left as it is.
  if (!shared || !type || !type.hasStaticShape() ||
      shared.getInputs()[0].getType() != type.getElementType())
    return nullptr;
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                        type.getElementType());
  auto own =
      linalg::FillOp::create(rewriter, loc, shared.getInputs()[0], empty);
  own->setAttr(kPrivateFill, rewriter.getI64IntegerAttr(id));
  rewriter.modifyOpInPlace(op, [&] { init->set(own.getResult(0)); });
  return own;
}

bool mlir::gated_attention::isPrivateFill(Operation *op) {
  return isa<linalg::FillOp>(op) && op->hasAttr(kPrivateFill);
}

std::optional<int64_t>
mlir::gated_attention::startsFromFill(linalg::LinalgOp part) {
  if (part.getNumDpsInits() != 1)
    return std::nullopt;
  if (linalg::FillOp fill = privateFillOf(part.getDpsInitOperand(0)->get()))
    return idOf(fill);
  return std::nullopt;
}

void mlir::gated_attention::markFilledTile(RewriterBase &rewriter,
                                           ArrayRef<LoopLikeOpInterface> loops,
                                           int64_t id) {
  for (LoopLikeOpInterface loop : loops.drop_back())
    loop->setAttr(kFilledTileLoop, rewriter.getUnitAttr());
  loops.back()->setAttr(kFilledDepthLoop, rewriter.getI64IntegerAttr(id));
}

std::optional<int64_t>
mlir::gated_attention::takeFilledMark(Operation *depthLoop) {
  auto id =
      dyn_cast_or_null<IntegerAttr>(depthLoop->removeAttr(kFilledDepthLoop));
  if (!id)
    return std::nullopt;
  return id.getInt();
}

LogicalResult mlir::gated_attention::startFromFill(RewriterBase &rewriter,
                                                   scf::ForOp depthLoop) {
  // The tile's tensors only pass through the loop: hoisting moved their
  // reads and writes out, so the reads below are all there is.
  for (BlockArgument arg : depthLoop.getRegionIterArgs())
    if (isa<RankedTensorType>(arg.getType()) &&
        llvm::any_of(arg.getUses(), [&](OpOperand &use) {
          return use.getOwner() != depthLoop.getBody()->getTerminator() ||
                 use.getOperandNumber() != arg.getArgNumber() - 1;
        }))
      return failure();

  struct Start {
    vector::TransferReadOp read;
    OpOperand *destination;
    Value value;
  };
  SmallVector<Start> starts;
  for (OpOperand &init : depthLoop.getInitArgsMutable()) {
    auto read = init.get().getDefiningOp<vector::TransferReadOp>();
    if (!read)
      continue;
    // Any in-bounds read of the tile (its slice of the tile loops' tensor)
    // reads only the tile, whatever its shape.
    auto tile = read.getBase().getDefiningOp<tensor::ExtractSliceOp>();
    if (read.hasOutOfBoundsDim() || read.getMask() || !tile)
      return failure();
    // Up through the tile loops to the nest's destination.
    OpOperand *destination = nullptr;
    Value v = tile.getSource();
    while (auto arg = dyn_cast<BlockArgument>(v)) {
      auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
      if (!loop || !loop->hasAttr(kFilledTileLoop))
        return failure();
      destination = loop.getTiedLoopInit(arg);
      if (!destination)
        return failure();
      v = destination->get();
    }
    linalg::FillOp fill = privateFillOf(v);
    if (!destination || !fill)
      return failure();
    starts.push_back({read, destination, fill.getInputs()[0]});
  }
  if (starts.empty())
    return failure();

  for (Start &start : starts) {
    rewriter.setInsertionPoint(start.read);
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(
        start.read, start.read.getVectorType(), start.value);
    // No tile of the nest reads its destination any more.
    Operation *nest = start.destination->getOwner();
    if (start.destination->get().getDefiningOp<tensor::EmptyOp>())
      continue;
    auto type = cast<RankedTensorType>(start.destination->get().getType());
    rewriter.setInsertionPoint(nest);
    Value empty = tensor::EmptyOp::create(
        rewriter, nest->getLoc(), type.getShape(), type.getElementType());
    rewriter.modifyOpInPlace(nest, [&] { start.destination->set(empty); });
  }
  return success();
}

LogicalResult mlir::gated_attention::sumFromZero(RewriterBase &rewriter,
                                                 scf::ForOp depthLoop) {
  bool changed = false;
  for (OpOperand &init : depthLoop.getInitArgsMutable()) {
    auto type = dyn_cast<VectorType>(init.get().getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      continue;
    Value start = init.get();
    Location loc = depthLoop.getLoc();
    rewriter.setInsertionPoint(depthLoop);
    Value zero =
        arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(type));
    rewriter.modifyOpInPlace(depthLoop, [&] { init.set(zero); });
    Value sum = depthLoop.getTiedLoopResult(&init);
    rewriter.setInsertionPointAfter(depthLoop);
    // The tile read for the final add (no other user now that the loop
    // starts from zero) waits until after the loop, so that it does not
    // hold registers the accumulators need (on tensors the read is pure;
    // its operands dominate the loop, hence the new place).
    auto read = start.getDefiningOp<vector::TransferReadOp>();
    if (read && isa<RankedTensorType>(read.getBase().getType()) &&
        read->use_empty() && read->getBlock() == depthLoop->getBlock())
      rewriter.moveOpAfter(read, depthLoop);
    auto total = arith::AddFOp::create(rewriter, loc, sum, start);
    rewriter.replaceAllUsesExcept(sum, total.getResult(), total);
    changed = true;
  }
  return success(changed);
}

SmallVector<linalg::FillOp> mlir::gated_attention::dropPrivateFills(
    RewriterBase &rewriter, Operation *root,
    const llvm::DenseMap<int64_t, int64_t> &unstarted) {
  SmallVector<linalg::FillOp> fills, kept;
  root->walk([&](Operation *op) {
    op->removeAttr(kFilledTileLoop);
    op->removeAttr(kFilledDepthLoop);
    if (isPrivateFill(op))
      fills.push_back(cast<linalg::FillOp>(op));
  });
  for (linalg::FillOp fill : fills) {
    auto parts = unstarted.find(idOf(fill));
    bool read = parts == unstarted.end() || parts->second != 0;
    fill->removeAttr(kPrivateFill);
    if (read) {
      kept.push_back(fill);
      continue;
    }
    // Every tile that read the fill starts from its value: what is left
    // are the destinations of the split parts' insertions, all overwritten.
    rewriter.replaceAllUsesWith(fill.getResult(0), fill.getOutputs()[0]);
    rewriter.eraseOp(fill);
  }
  return kept;
}
