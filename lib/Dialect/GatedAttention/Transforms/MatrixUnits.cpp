//===- MatrixUnits.cpp - bf16 tile products on x86 matrix units -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "MatrixUnits.h"
#include "PackOperands.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::gated_attention;
using utils::IteratorType;

std::optional<MatrixUnits>
mlir::gated_attention::parseMatrixUnits(StringRef name) {
  return llvm::StringSwitch<std::optional<MatrixUnits>>(name)
      .Case("fma", MatrixUnits::FMA)
      .Case("avx512-bf16", MatrixUnits::AVX512BF16)
      .Case("amx", MatrixUnits::AMX)
      .Default(std::nullopt);
}

namespace {
/// The bf16 tensor `x` and the scale `c` when `v` is computed elementwise as
/// `extf(x) * c` by a linalg.generic (`c` from outside its body); `x` and
/// null when it is `extf(x)`; nulls if neither.
std::pair<Value, Value> matchScaledExtension(Value v) {
  auto gen = v.getDefiningOp<linalg::GenericOp>();
  if (!gen || gen.getNumDpsInputs() != 1 || gen.getNumDpsInits() != 1 ||
      gen.getNumReductionLoops() != 0 ||
      !llvm::all_of(gen.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return {};
  Block *body = gen.getBody();
  Value yielded = body->getTerminator()->getOperand(0);
  if (auto ext = yielded.getDefiningOp<arith::ExtFOp>();
      ext && ext.getIn() == body->getArgument(0) &&
      ext.getIn().getType().isBF16())
    return {gen.getDpsInputOperand(0)->get(), Value()};
  auto mul = yielded.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return {};
  for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())}) {
    auto ext = x.getDefiningOp<arith::ExtFOp>();
    if (ext && ext.getIn() == body->getArgument(0) &&
        ext.getIn().getType().isBF16() && c.getParentBlock() != body)
      return {gen.getDpsInputOperand(0)->get(), c};
  }
  return {};
}

/// A zero-filled tensor: the start of S = Q Kᵀ.
bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.value(), m_AnyZeroFloat());
}

/// An elementwise linalg.generic over `input` into a new tensor of `shape`
/// and `elementType`, reading `input` through `readMap`.
Value mapElements(RewriterBase &rewriter, Location loc, Value input,
                  ArrayRef<int64_t> shape, Type elementType, AffineMap readMap,
                  function_ref<Value(OpBuilder &, Location, Value)> body) {
  unsigned rank = shape.size();
  Value init = tensor::EmptyOp::create(rewriter, loc, shape, elementType);
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{input},
      ValueRange{init},
      ArrayRef<AffineMap>{readMap, rewriter.getMultiDimIdentityMap(rank)},
      iterators, [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, body(b, l, args[0]));
      });
  return op.getResult(0);
}
/// Folds `round` (bf16 of P) into the elementwise generic computing P, as
/// its last result: P is rounded where it is computed, not read back in a
/// pass of its own (with roundWithAVX512BF16, 1.03-1.06x on the bf16 AMX
/// forward). The f32 result stays for P's other users (the row sums).
/// Returns the erased producer and the fused op.
std::optional<std::pair<Operation *, linalg::GenericOp>>
fuseRounding(RewriterBase &rewriter, linalg::GenericOp round) {
  // (Only an all-parallel linalg.generic producer qualifies.)
  OpOperand *input = round.getDpsInputOperand(0);
  if (!linalg::areElementwiseOpsFusable(input))
    return std::nullopt;
  Operation *producer = input->get().getDefiningOp();
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, input);
  if (failed(fused))
    return std::nullopt;
  for (auto [original, replacement] : fused->replacements)
    rewriter.replaceAllUsesWith(original, replacement);
  rewriter.eraseOp(round);
  rewriter.eraseOp(producer);
  return std::pair<Operation *, linalg::GenericOp>(
      producer, cast<linalg::GenericOp>(fused->fusedOp));
}
} // namespace

bool mlir::gated_attention::isPairContraction(linalg::LinalgOp op) {
  return isa<linalg::GenericOp>(op) && op.getNumLoops() == 4 &&
         op.getNumDpsInputs() == 2 &&
         op.getIteratorTypesArray() ==
             SmallVector<IteratorType>{
                 IteratorType::parallel, IteratorType::parallel,
                 IteratorType::reduction, IteratorType::reduction} &&
         cast<ShapedType>(op.getDpsInputOperand(0)->get().getType())
             .getElementType()
             .isBF16();
}

FailureOr<PairContraction>
mlir::gated_attention::packBF16Pairs(RewriterBase &rewriter,
                                     linalg::GenericOp op) {
  MLIRContext *ctx = op.getContext();
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  auto map3 = [&](ArrayRef<AffineExpr> results) {
    return AffineMap::get(3, 0, results, ctx);
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool transposed = maps[1] == map3({d1, d2});
  if (maps[0] != map3({d0, d2}) || maps[2] != map3({d0, d1}) ||
      (!transposed && maps[1] != map3({d2, d1})))
    return failure();
  Value lhs = op.getDpsInputOperand(0)->get();
  Value rhs = op.getDpsInputOperand(1)->get();
  Value init = op.getDpsInitOperand(0)->get();
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  Type f32 = rewriter.getF32Type(), bf16 = rewriter.getBF16Type();
  bool lhsPaired = lhsType.getElementType().isBF16();
  if (!(lhsPaired || lhsType.getElementType().isF32()) ||
      !rhsType.getElementType().isBF16() ||
      getElementTypeOrSelf(init.getType()) != f32 ||
      !lhsType.hasStaticShape() || !rhsType.hasStaticShape())
    return failure();
  int64_t m = lhsType.getDimSize(0), k = lhsType.getDimSize(1);
  int64_t n = transposed ? rhsType.getDimSize(0) : rhsType.getDimSize(1);
  if (k % 2)
    return failure();

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  // Left operand: the bf16 values themselves when the f32 ones are only
  // their extension or scaled copies (the scale then applies to the sums),
  // else rounded.
  // (A bf16 left operand, the backward's, is taken as it is.)
  // (Not a structured binding: a lambda below captures `scale`, which
  // C++17 does not allow.)
  Value unscaled, scale;
  std::tie(unscaled, scale) =
      lhsPaired ? std::pair(lhs, Value()) : matchScaledExtension(lhs);
  // (A scale applies to the sums only when they start from zero.)
  if (scale && !isZeroFill(init))
    unscaled = scale = nullptr;
  PairContraction paired;
  if (!unscaled) {
    // (Right after P: fused, the op computing P and its rounding then
    // precede P's other users.)
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfterValue(lhs);
    unscaled = mapElements(rewriter, loc, lhs, {m, k}, bf16,
                           rewriter.getMultiDimIdentityMap(2),
                           [&](OpBuilder &b, Location l, Value x) -> Value {
                             return arith::TruncFOp::create(b, l, bf16, x);
                           });
    auto round = unscaled.getDefiningOp<linalg::GenericOp>();
    auto rounded = fuseRounding(rewriter, round);
    if (rounded) {
      paired.fusedProducer = rounded->first;
      round = rounded->second;
      unscaled = round->getResult(round->getNumResults() - 1);
    }
    paired.elementwise.push_back(round);
  }
  Value lhsPairs = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get({m, k / 2, 2}, bf16), unscaled,
      ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  // Right operand: (k/2, n, 2), pairs of consecutive k side by side.
  auto [rhsPairs, rhsPack] = packPairs(rewriter, loc, rhs, transposed);
  rewriter.setInsertionPoint(op);

  auto contraction = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{lhsPairs, rhsPairs},
      ValueRange{init},
      ArrayRef<AffineMap>{AffineMap::get(4, 0, {d0, d2, d3}, ctx),
                          AffineMap::get(4, 0, {d2, d1, d3}, ctx),
                          AffineMap::get(4, 0, {d0, d1}, ctx)},
      ArrayRef<IteratorType>{IteratorType::parallel, IteratorType::parallel,
                             IteratorType::reduction, IteratorType::reduction},
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value a = arith::ExtFOp::create(b, l, f32, args[0]);
        Value x = arith::ExtFOp::create(b, l, f32, args[1]);
        Value product = arith::MulFOp::create(b, l, a, x);
        linalg::YieldOp::create(
            b, l, arith::AddFOp::create(b, l, args[2], product).getResult());
      });
  Value result = contraction.getResult(0);
  if (scale) {
    result = mapElements(rewriter, loc, result, {m, n}, f32,
                         rewriter.getMultiDimIdentityMap(2),
                         [&](OpBuilder &b, Location l, Value s) -> Value {
                           return arith::MulFOp::create(b, l, s, scale);
                         });
    paired.elementwise.push_back(result.getDefiningOp<linalg::GenericOp>());
  }
  rewriter.replaceOp(op, result);
  paired.contraction = contraction;
  paired.rhsPack = rhsPack;
  return paired;
}

int64_t mlir::gated_attention::largestDivisorAtMost(int64_t size,
                                                    int64_t limit) {
  for (int64_t d = std::min(size, limit); d > 1; --d)
    if (size % d == 0)
      return d;
  return 1;
}

/// The marks of markForAMXTiles.
static constexpr StringLiteral kAMXTiles = "gated_attention.amx_tiles";
static constexpr StringLiteral kAMXZeroStart = "gated_attention.amx_zero_start";

void mlir::gated_attention::markForAMXTiles(RewriterBase &rewriter,
                                            linalg::GenericOp op) {
  OpOperand *init = op.getDpsInitOperand(0);
  auto fill = init->get().getDefiningOp<linalg::FillOp>();
  bool fromZero = isZeroFill(init->get());
  rewriter.modifyOpInPlace(op, [&] {
    op->setAttr(kAMXTiles, rewriter.getUnitAttr());
    if (!fromZero)
      return;
    init->set(fill.getDpsInitOperand(0)->get());
    op->setAttr(kAMXZeroStart, rewriter.getUnitAttr());
  });
}

bool mlir::gated_attention::isForAMXTiles(Operation *op) {
  return op->hasAttr(kAMXTiles);
}

bool mlir::gated_attention::startsAMXTilesFromZero(Operation *op) {
  return op->hasAttr(kAMXZeroStart);
}

SmallVector<int64_t>
mlir::gated_attention::amxRegisterTile(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // One tile edge, or two when they divide the range.
  auto edge = [](int64_t size, int64_t limit) {
    int64_t tile = largestDivisorAtMost(size, limit);
    return size % (2 * tile) == 0 ? 2 * tile : tile;
  };
  return {edge(ranges[0], kAMXRows), edge(ranges[1], kAMXColumns), 0, 0};
}

FailureOr<Value>
mlir::gated_attention::emitAVX512DotTile(RewriterBase &rewriter,
                                         linalg::LinalgOp op) {
  Value lhs = op.getDpsInputOperand(0)->get();
  Value rhs = op.getDpsInputOperand(1)->get();
  Value init = op.getDpsInitOperand(0)->get();
  ArrayRef<int64_t> lhsShape = cast<RankedTensorType>(lhs.getType()).getShape();
  ArrayRef<int64_t> rhsShape = cast<RankedTensorType>(rhs.getType()).getShape();
  int64_t rows = lhsShape[0], pairs = lhsShape[1], cols = rhsShape[1];
  int64_t lanes = cols % 16 == 0  ? 16
                  : cols % 8 == 0 ? 8
                  : cols % 4 == 0 ? 4
                                  : 0;
  if (!lanes)
    return failure();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Type bf16 = rewriter.getBF16Type(), f32 = rewriter.getF32Type();
  // Rows of pairs as plain bf16 rows: one dot operand is 2 x lanes
  // consecutive values of a right-hand row, the other one pair of a
  // left-hand row broadcast to every lane (a 32-bit broadcast).
  auto flatten = [&](Value pairsTensor, int64_t outer, int64_t inner) {
    return tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({outer, 2 * inner}, bf16),
        pairsTensor, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  };
  Value lhsRows = flatten(lhs, rows, pairs);
  Value rhsRows = flatten(rhs, pairs, cols);
  auto index = [&](int64_t i) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, i);
  };
  auto read = [&](Value tensor, int64_t row, int64_t col, int64_t size,
                  Type type) -> Value {
    return vector::TransferReadOp::create(
        rewriter, loc, VectorType::get({size}, type), tensor,
        ValueRange{index(row), index(col)}, std::nullopt, ArrayRef<bool>{true});
  };
  int64_t chunks = cols / lanes;
  SmallVector<Value> acc;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < chunks; ++c)
      acc.push_back(read(init, r, c * lanes, lanes, f32));
  auto pairType = VectorType::get({1}, rewriter.getI32Type());
  auto lanesI32 = VectorType::get({lanes}, rewriter.getI32Type());
  auto dotType = VectorType::get({2 * lanes}, bf16);
  for (int64_t p = 0; p < pairs; ++p) {
    SmallVector<Value> b;
    for (int64_t c = 0; c < chunks; ++c)
      b.push_back(read(rhsRows, p, 2 * c * lanes, 2 * lanes, bf16));
    for (int64_t r = 0; r < rows; ++r) {
      Value pair = vector::BitCastOp::create(rewriter, loc, pairType,
                                             read(lhsRows, r, 2 * p, 2, bf16));
      Value a = vector::BitCastOp::create(
          rewriter, loc, dotType,
          vector::BroadcastOp::create(
              rewriter, loc, lanesI32,
              vector::ExtractOp::create(rewriter, loc, pair, 0)));
      for (int64_t c = 0; c < chunks; ++c) {
        Value &sum = acc[r * chunks + c];
        sum = x86vector::DotBF16Op::create(rewriter, loc, sum.getType(), sum, a,
                                           b[c]);
      }
    }
  }
  Value result = init;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < chunks; ++c)
      result = vector::TransferWriteOp::create(
                   rewriter, loc, acc[r * chunks + c], result,
                   ValueRange{index(r), index(c * lanes)}, ArrayRef<bool>{true})
                   .getResult();
  return result;
}

namespace {
/// The input maps of the pair packs: (C, P, 2) keys and (P, 2, C) values
/// read for output element (p, c, i).
bool isKeyPackMap(AffineMap map) {
  MLIRContext *ctx = map.getContext();
  return map == AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0, 2}, ctx);
}
bool isValuePackMap(AffineMap map) {
  MLIRContext *ctx = map.getContext();
  return map == AffineMap::getPermutationMap(ArrayRef<unsigned>{0, 2, 1}, ctx);
}

/// The transpose of the matrix whose rows are `rows` (1-D vectors of one
/// type), as its rows. A square power-of-two matrix is transposed in
/// log2(n) rounds of two-row shuffles (row i and row i + h swap their
/// off-diagonal h-wide blocks): n log2(n) vector.shuffle ops, which the
/// vector canonicalizations keep and LLVM lowers to permutes. Other shapes
/// go through vector.transpose.
SmallVector<Value> transposeRows(OpBuilder &b, Location loc,
                                 ArrayRef<Value> rows) {
  auto rowType = cast<VectorType>(rows.front().getType());
  int64_t n = rows.size(), width = rowType.getDimSize(0);
  if (n != width || !llvm::isPowerOf2_64(n)) {
    auto matrixType = VectorType::get({n, width}, rowType.getElementType());
    Value matrix = arith::ConstantOp::create(b, loc, matrixType,
                                             b.getZeroAttr(matrixType));
    for (auto [i, row] : llvm::enumerate(rows))
      matrix = vector::InsertOp::create(b, loc, row, matrix,
                                        ArrayRef<int64_t>{int64_t(i)});
    Value t =
        vector::TransposeOp::create(b, loc, matrix, ArrayRef<int64_t>{1, 0});
    SmallVector<Value> result;
    for (int64_t j = 0; j < width; ++j)
      result.push_back(
          vector::ExtractOp::create(b, loc, t, ArrayRef<int64_t>{j}));
    return result;
  }
  SmallVector<Value> m(rows);
  for (int64_t h = n / 2; h >= 1; h /= 2) {
    // Masks index the concatenation of rows i (0..n-1) and i + h (n..2n-1).
    SmallVector<int64_t> low, high;
    for (int64_t c = 0; c < n; ++c) {
      low.push_back(c & h ? n + c - h : c);
      high.push_back(c & h ? n + c : c + h);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (i & h)
        continue;
      Value a = m[i], c = m[i + h];
      m[i] = vector::ShuffleOp::create(b, loc, a, c, low);
      m[i + h] = vector::ShuffleOp::create(b, loc, a, c, high);
    }
  }
  return m;
}

/// A bf16 copy into (P, C, 2) from (C, P, 2) or (P, 2, C): packBF16Pairs's
/// rhsPack.
bool isPairPack(linalg::LinalgOp op) {
  auto gen = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!gen || gen.getNumLoops() != 3 || gen.getNumDpsInputs() != 1 ||
      gen.getNumDpsInits() != 1 || gen.getNumParallelLoops() != 3)
    return false;
  auto inType = dyn_cast<RankedTensorType>(gen.getDpsInputs()[0].getType());
  auto outType = dyn_cast<RankedTensorType>(gen.getDpsInits()[0].getType());
  if (!inType || !outType || !inType.hasStaticShape() ||
      !outType.hasStaticShape() || !inType.getElementType().isBF16() ||
      !outType.getElementType().isBF16() || outType.getDimSize(2) != 2)
    return false;
  SmallVector<AffineMap> maps = gen.getIndexingMapsArray();
  Block *body = gen.getBody();
  return maps[1].isIdentity() &&
         (isKeyPackMap(maps[0]) || isValuePackMap(maps[0])) &&
         body->getOperations().size() == 1 &&
         body->getTerminator()->getOperand(0) == body->getArgument(0);
}
} // namespace

FailureOr<Value> mlir::gated_attention::emitPairPack(RewriterBase &rewriter,
                                                     linalg::LinalgOp op) {
  if (!isPairPack(op))
    return failure();
  Value in = op.getDpsInputOperand(0)->get();
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t pairs = outType.getDimSize(0), cols = outType.getDimSize(1);
  bool keys = isKeyPackMap(op.getIndexingMapsArray()[0]);
  // Register-size blocks of the packed operand, each a square of 32-bit
  // pairs where the sizes allow.
  int64_t blockPairs = largestDivisorAtMost(pairs, kAMXPairs);
  int64_t blockCols = largestDivisorAtMost(cols, kAMXColumns);
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Type bf16 = rewriter.getBF16Type(), i32 = rewriter.getI32Type();
  auto constant = [&](OpBuilder &b, int64_t i) -> Value {
    return arith::ConstantIndexOp::create(b, loc, i);
  };
  // Both sides as rows of bf16: keys (C, 2P), values (2P, C), the packed
  // operand (P, 2C) (a row: the pairs of one reduction step, side by side).
  Value inRows = tensor::CollapseShapeOp::create(
      rewriter, loc,
      keys ? RankedTensorType::get({cols, 2 * pairs}, bf16)
           : RankedTensorType::get({2 * pairs, cols}, bf16),
      in,
      keys ? ArrayRef<ReassociationIndices>{{0}, {1, 2}}
           : ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  // Written where the op writes (a slice of the packed block, for a piece
  // packed from its page: no copy of the packed piece).
  Value init = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({pairs, 2 * cols}, bf16),
      op.getDpsInits()[0], ArrayRef<ReassociationIndices>{{0}, {1, 2}});

  // One block at offsets (p0 pairs, c0 columns) of `packed`.
  auto emitBlock = [&](OpBuilder &b, Value p0, Value c0,
                       Value packed) -> Value {
    auto offset = [&](Value base, int64_t scale, int64_t add) -> Value {
      Value v = base;
      if (scale != 1)
        v = arith::MulIOp::create(b, loc, v, constant(b, scale));
      if (add)
        v = arith::AddIOp::create(b, loc, v, constant(b, add));
      return v;
    };
    auto read = [&](Value row, Value col, int64_t size) -> Value {
      return vector::TransferReadOp::create(
          b, loc, VectorType::get({size}, bf16), inRows, ValueRange{row, col},
          std::nullopt, ArrayRef<bool>{true});
    };
    auto write = [&](Value row, int64_t p) {
      packed = vector::TransferWriteOp::create(
                   b, loc, row, packed,
                   ValueRange{offset(p0, 1, p), offset(c0, 2, 0)},
                   ArrayRef<bool>{true})
                   .getResult();
    };
    if (keys) {
      // A key row's pairs as 32-bit lanes; the block of them transposed.
      SmallVector<Value> rows;
      for (int64_t c = 0; c < blockCols; ++c)
        rows.push_back(vector::BitCastOp::create(
            b, loc, VectorType::get({blockPairs}, i32),
            read(offset(c0, 1, c), offset(p0, 2, 0), 2 * blockPairs)));
      for (auto [p, row] : llvm::enumerate(transposeRows(b, loc, rows)))
        write(vector::BitCastOp::create(
                  b, loc, VectorType::get({2 * blockCols}, bf16), row),
              p);
    } else {
      // Value rows 2p and 2p + 1 interleaved.
      for (int64_t p = 0; p < blockPairs; ++p)
        write(vector::InterleaveOp::create(
                  b, loc, read(offset(p0, 2, 2 * p), c0, blockCols),
                  read(offset(p0, 2, 2 * p + 1), c0, blockCols)),
              p);
    }
    return packed;
  };
  auto loop = scf::ForOp::create(
      rewriter, loc, constant(rewriter, 0), constant(rewriter, pairs),
      constant(rewriter, blockPairs), ValueRange{init},
      [&](OpBuilder &b, Location, Value p0, ValueRange outer) {
        auto inner = scf::ForOp::create(
            b, loc, constant(b, 0), constant(b, cols), constant(b, blockCols),
            outer, [&](OpBuilder &b, Location, Value c0, ValueRange args) {
              scf::YieldOp::create(b, loc, emitBlock(b, p0, c0, args[0]));
            });
        scf::YieldOp::create(b, loc, inner.getResults());
      });
  return tensor::ExpandShapeOp::create(
             rewriter, loc, outType, loop.getResult(0),
             ArrayRef<ReassociationIndices>{{0}, {1, 2}})
      .getResult();
}

void mlir::gated_attention::requireMatrixUnitFeatures(Operation *root,
                                                      MatrixUnits units) {
  SmallVector<StringRef> features = {"+avx512f", "+avx512bf16"};
  if (units == MatrixUnits::AMX)
    features.append({"+amx-tile", "+amx-bf16"});
  auto attr = LLVM::TargetFeaturesAttr::get(root->getContext(), features);
  root->walk([&](FunctionOpInterface func) {
    WalkResult used = func->walk([](Operation *op) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      return isa<x86vector::DotBF16Op>(op) ||
                     (linalgOp && isPairContraction(linalgOp))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (used.wasInterrupted())
      func->setAttr("target_features", attr);
  });
}

void mlir::gated_attention::roundWithAVX512BF16(Operation *root) {
  SmallVector<arith::TruncFOp> truncs;
  root->walk([&](FunctionOpInterface func) {
    auto features =
        func->getAttrOfType<LLVM::TargetFeaturesAttr>("target_features");
    if (!features || !features.contains("+avx512bf16"))
      return;
    func->walk([&](arith::TruncFOp op) {
      auto in = dyn_cast<VectorType>(op.getIn().getType());
      if (in && !in.isScalable() && in.getElementType().isF32() &&
          getElementTypeOrSelf(op.getType()).isBF16() &&
          in.getNumElements() % 16 == 0 &&
          (!op.getRoundingmode() ||
           *op.getRoundingmode() == arith::RoundingMode::to_nearest_even))
        truncs.push_back(op);
    });
  });
  IRRewriter rewriter(root->getContext());
  for (arith::TruncFOp op : truncs) {
    Location loc = op.getLoc();
    int64_t n = cast<VectorType>(op.getIn().getType()).getNumElements();
    Type f32 = rewriter.getF32Type(), bf16 = rewriter.getBF16Type();
    rewriter.setInsertionPoint(op);
    Value x = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({n}, f32), op.getIn());
    auto flat = VectorType::get({n}, bf16);
    Value result = arith::ConstantOp::create(
        rewriter, loc, flat,
        DenseElementsAttr::get(flat, rewriter.getZeroAttr(bf16)));
    // (vcvtneps2bf16 rounds to nearest even, as arith.truncf.)
    for (int64_t i = 0; i < n; i += 16) {
      Value part = vector::ExtractStridedSliceOp::create(
          rewriter, loc, x, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{16},
          ArrayRef<int64_t>{1});
      Value rounded = x86vector::CvtPackedF32ToBF16Op::create(
          rewriter, loc, VectorType::get({16}, bf16), part);
      result = vector::InsertStridedSliceOp::create(
          rewriter, loc, rounded, result, ArrayRef<int64_t>{i},
          ArrayRef<int64_t>{1});
    }
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(op, op.getType(), result);
  }
}
