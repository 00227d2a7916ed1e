//===- TestAMXEmulation.cpp - AMX tile ops as linalg ops ------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Rewrites amx.tile_load / tile_mulf / tile_store into linalg ops with the
// same meaning (a tile is a stack buffer; tdpbf16ps adds, per output
// element, the products of the pairs of a left row and a right column), so
// that the tiles gated-attention-amx-tiles emits (their offsets, strides
// and steps) can be run and compared on a CPU without AMX. The
// instruction's own rounding is not modelled: the test that runs this uses
// values whose sums are exact. The constructor asking Linux for the tile
// state goes too.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
struct TestAMXEmulationPass
    : PassWrapper<TestAMXEmulationPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestAMXEmulationPass)

  StringRef getArgument() const final { return "test-amx-emulation"; }
  StringRef getDescription() const final {
    return "Rewrite AMX tile ops into linalg ops of the same meaning";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                    memref::MemRefDialect>();
  }

  void runOnOperation() override {
    SmallVector<Operation *> tileOps;
    getOperation()->walk([&](Operation *op) {
      if (isa<amx::TileZeroOp, amx::TileLoadOp, amx::TileMulFOp,
              amx::TileStoreOp>(op))
        tileOps.push_back(op);
    });
    // Each tile value becomes a stack buffer of its shape.
    IRMapping buffers;
    OpBuilder b(&getContext());
    for (Operation *op : tileOps) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      auto bufferOf = [&](amx::TileType tile) -> Value {
        return memref::AllocaOp::create(
            b, loc, MemRefType::get(tile.getShape(), tile.getElementType()));
      };
      // The rows x columns window of `base` at `indices`.
      auto window = [&](Value base, ValueRange indices,
                        ArrayRef<int64_t> shape) -> Value {
        return memref::SubViewOp::create(
            b, loc, base, getAsOpFoldResult(indices),
            getAsIndexOpFoldResult(&getContext(), shape),
            getAsIndexOpFoldResult(&getContext(), {1, 1}));
      };
      if (auto zero = dyn_cast<amx::TileZeroOp>(op)) {
        Value tile = bufferOf(zero.getTileType());
        Value zeroValue = arith::ConstantOp::create(
            b, loc, b.getZeroAttr(zero.getTileType().getElementType()));
        linalg::FillOp::create(b, loc, ValueRange{zeroValue}, ValueRange{tile});
        buffers.map(zero.getRes(), tile);
      } else if (auto load = dyn_cast<amx::TileLoadOp>(op)) {
        Value tile = bufferOf(load.getTileType());
        linalg::CopyOp::create(b, loc,
                               window(load.getBase(), load.getIndices(),
                                      load.getTileType().getShape()),
                               tile);
        buffers.map(load.getRes(), tile);
      } else if (auto store = dyn_cast<amx::TileStoreOp>(op)) {
        linalg::CopyOp::create(b, loc, buffers.lookup(store.getVal()),
                               window(store.getBase(), store.getIndices(),
                                      store.getTileType().getShape()));
      } else {
        auto mul = cast<amx::TileMulFOp>(op);
        Value sum = bufferOf(mul.getTileType());
        linalg::CopyOp::create(b, loc, buffers.lookup(mul.getAcc()), sum);
        // Left rows x (pairs, 2), right pairs x (columns, 2).
        auto pairs = [&](Value tile) -> Value {
          return memref::ExpandShapeOp::create(
              b, loc,
              MemRefType::get(
                  {cast<MemRefType>(tile.getType()).getDimSize(0),
                   cast<MemRefType>(tile.getType()).getDimSize(1) / 2, 2},
                  cast<MemRefType>(tile.getType()).getElementType()),
              tile, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
        };
        AffineExpr m, n, k, pair;
        bindDims(&getContext(), m, n, k, pair);
        auto map = [&](ArrayRef<AffineExpr> results) {
          return AffineMap::get(4, 0, results, &getContext());
        };
        using utils::IteratorType;
        linalg::GenericOp::create(
            b, loc, TypeRange{},
            ValueRange{pairs(buffers.lookup(mul.getLhs())),
                       pairs(buffers.lookup(mul.getRhs()))},
            ValueRange{sum},
            ArrayRef<AffineMap>{map({m, k, pair}), map({k, n, pair}),
                                map({m, n})},
            ArrayRef<IteratorType>{
                IteratorType::parallel, IteratorType::parallel,
                IteratorType::reduction, IteratorType::reduction},
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Type f32 = nb.getF32Type();
              Value product = arith::MulFOp::create(
                  nb, l, arith::ExtFOp::create(nb, l, f32, args[0]),
                  arith::ExtFOp::create(nb, l, f32, args[1]));
              linalg::YieldOp::create(
                  nb, l,
                  arith::AddFOp::create(nb, l, args[2], product).getResult());
            });
        buffers.map(mul.getRes(), sum);
      }
    }
    for (Operation *op : llvm::reverse(tileOps))
      op->erase();
    SmallVector<Operation *> constructor;
    getOperation()->walk([&](Operation *op) {
      auto symbol = op->getAttrOfType<StringAttr>("sym_name");
      if (isa<LLVM::GlobalCtorsOp>(op) ||
          (symbol && symbol.getValue() == "__gated_attention_request_amx"))
        constructor.push_back(op);
    });
    for (Operation *op : constructor)
      op->erase();
  }
};
} // namespace

namespace mlir::gated_attention::test {
void registerTestAMXEmulationPass() {
  PassRegistration<TestAMXEmulationPass>();
}
} // namespace mlir::gated_attention::test
