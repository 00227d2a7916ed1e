//===- OnlineSoftmax.cpp - attention as a FlashAttention-2 key loop -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The online-softmax form of the dense op: every (batch, head group) is
// one tile of all its rows, computed by OnlineSoftmaxTile
// (OnlineSoftmaxTile.cpp: a sequential loop over key blocks carrying
// (m, l, acc), and the gate applied in the epilogue before the single
// store); the paged op's tiles are built in PagedOnlineSoftmax.cpp.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "OnlineSoftmaxTile.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;
using namespace mlir::gated_attention;

//===----------------------------------------------------------------------===//
// The dense op
//===----------------------------------------------------------------------===//

namespace {
/// The online softmax of a dense op: every (batch, head group) of the op is
/// one tile of all its rows.
class DenseOnlineSoftmax : public OnlineSoftmaxTile {
public:
  DenseOnlineSoftmax(RewriterBase &b, AttentionOp op,
                     const OnlineSoftmaxOptions &options)
      : OnlineSoftmaxTile(b, op.getLoc(), specOf(op, options)), op(op),
        decodeVariant(options.decodeVariant) {}

  /// The op's replacements: the result, and the log-sum-exp if asked.
  SmallVector<Value, 2> build();
  /// The partial results of part `split` of `splits` of every row's keys
  /// (OnlineSoftmaxTile::Partial), f32: out [B, Hq, Sq, Dv], then sum, max
  /// and sigma [B, Hq, Sq].
  SmallVector<Value, 4> buildPartials(Value split, Value splits);

private:
  static Spec specOf(AttentionOp op, const OnlineSoftmaxOptions &options) {
    Spec spec{op.getQueryType().getElementType(),
              op.getHeadDim(),
              op.getValueHeadDim(),
              op.getGroupSize(),
              options.keyBlock,
              op.getScaleValue(),
              op.getGate(),
              op.getCombine(),
              op.hasGate(),
              op.isGateShared(),
              op.isGateHeadwise(),
              op.hasLse()};
    spec.diagonalKeyBlock = options.diagonalKeyBlock;
    return spec;
  }
  Value sourceOf(Operand operand) {
    switch (operand) {
    case Operand::Query:
      return op.getQuery();
    case Operand::Key:
      return op.getKey();
    case Operand::Value:
      return op.getValue();
    case Operand::Gate:
      return op.getGateInput();
    }
    llvm_unreachable("unknown operand");
  }
  /// `rows x width` slice of head `head` of a 4-D operand at row `row`,
  /// padded with zeros to `paddedRows` rows when that is larger.
  Value tile(Value source, Value head, OpFoldResult row, OpFoldResult rows,
             OpFoldResult paddedRows);
  Value rowsOf(Operand operand, Value head) override {
    return tile(sourceOf(operand), head, b.getIndexAttr(0), rows, rowsTile);
  }
  Value keysOf(Operand operand, Value kvHead, Value kb,
               OpFoldResult cols) override {
    return tile(sourceOf(operand), kvHead, kb, cols, b.getIndexAttr(blockKeys));
  }

  /// The rows of a tile and its one-row version when it has both
  /// (decodeVariant with the rows bounded but dynamic), else `version()`.
  SmallVector<Value> buildVersions(function_ref<SmallVector<Value>()> version);

  /// A result filled tile by tile: element type and width (0: a
  /// [B, Hq, Sq] result, else [B, Hq, Sq, width]).
  struct RowsResult {
    Type type;
    int64_t width;
  };
  /// `build()`'s values (the results with a tile's rows inserted), in two
  /// versions where the rows are bounded but dynamic (decodeVariant): one
  /// with `rows` the bound, for full tiles, and one with the rows dynamic.
  SmallVector<Value> buildFullVersion(function_ref<SmallVector<Value>()> build);
  /// Sets the tile's rows and the op's keys and causal offset.
  void prepare();
  /// The results, each tile's values inserted head by head:
  /// `tileFn(firstHead)` gives each result's rows-first tensor of every
  /// stacked head in turn (OnlineSoftmaxTile::splitHeads' order).
  SmallVector<Value> buildRows(ArrayRef<RowsResult> results,
                               function_ref<SmallVector<Value>(Value)> tileFn);

  AttentionOp op;
  bool decodeVariant;
  Value batch;
  OpFoldResult rows;
  Value opKeys, opCausalOffset;
};
} // namespace

Value DenseOnlineSoftmax::tile(Value source, Value head, OpFoldResult row,
                               OpFoldResult rows, OpFoldResult paddedRows) {
  auto type = cast<RankedTensorType>(source.getType());
  int64_t width = type.getDimSize(3);
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  SmallVector<OpFoldResult> offsets = {batch, head, row, zero};
  SmallVector<OpFoldResult> sizes = {one, one, rows, b.getIndexAttr(width)};
  SmallVector<OpFoldResult> strides(4, one);
  std::optional<int64_t> staticRows = getConstantIntValue(rows);
  auto sliceType =
      RankedTensorType::get({staticRows.value_or(ShapedType::kDynamic), width},
                            type.getElementType());
  return padRows(tensor::ExtractSliceOp::create(b, loc, sliceType, source,
                                                offsets, sizes, strides),
                 paddedRows);
}

SmallVector<Value>
DenseOnlineSoftmax::buildVersions(function_ref<SmallVector<Value>()> version) {
  std::optional<int64_t> bound = getConstantIntValue(rowsTile);
  if (!decodeVariant || !bound || getConstantIntValue(rows))
    return version();
  // Rows bounded but dynamic in a tile of an op of dynamic Sq. Both
  // versions are inside the tile, so the scf.forall still writes the op's
  // destination (test/Pipelines/destination-passing.mlir).
  return buildWithDecodeRows(getValueOrCreateConstantIndexOp(b, loc, rows),
                             *bound, version);
}

SmallVector<Value>
DenseOnlineSoftmax::buildFullVersion(function_ref<SmallVector<Value>()> build) {
  std::optional<int64_t> bound = getConstantIntValue(rowsTile);
  if (!decodeVariant || !bound || getConstantIntValue(rows))
    return build();
  // A tile of `bound` rows (every tile of a sequence but its last) reads
  // its query and gate rows and writes its output rows in place; the
  // version for fewer rows copies them through tiles padded to `bound`
  // (about a tenth of the torch op's time, bf16 on AMX at S 1024).
  Value full = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      getValueOrCreateConstantIndexOp(b, loc, rows), index(*bound));
  OpFoldResult dynamicRows = rows;
  auto branch = scf::IfOp::create(
      b, loc, full,
      [&](OpBuilder &nb, Location l) {
        rows = b.getIndexAttr(*bound);
        scf::YieldOp::create(nb, l, build());
        rows = dynamicRows;
      },
      [&](OpBuilder &nb, Location l) { scf::YieldOp::create(nb, l, build()); });
  return SmallVector<Value>(branch.getResults());
}

void DenseOnlineSoftmax::prepare() {
  Value query = op.getQuery();
  rows = tensor::getMixedSize(b, loc, query, 2);
  rowsTile = rows;
  // Pad the query tile to a static row count when one bounds the rows (the
  // tiles made by gated-attention-tile have min(Bq, Sq - q0) rows).
  if (!getConstantIntValue(rows)) {
    FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
        presburger::BoundType::UB, {query, 2}, /*stopCondition=*/nullptr,
        /*closedUB=*/true);
    if (succeeded(bound))
      rowsTile = b.getIndexAttr(*bound);
  }
  // All query heads of a GQA group share one query tile (FlashAttention-3's
  // "pack GQA"), so each key/value block is read and packed once per group.
  tileRows = rowsTile;
  if (std::optional<int64_t> headRows = getConstantIntValue(rowsTile)) {
    stack = op.getGroupSize();
    tileRows = b.getIndexAttr(stack * *headRows);
  }
  opKeys = tensor::DimOp::create(b, loc, op.getKey(), 2);
  opCausalOffset = Value();
  if (op.getCausal())
    opCausalOffset = buildCausalOffset(
        b, loc, opKeys, getValueOrCreateConstantIndexOp(b, loc, rows));
}

SmallVector<Value>
DenseOnlineSoftmax::buildRows(ArrayRef<RowsResult> resultKinds,
                              function_ref<SmallVector<Value>(Value)> tileFn) {
  Value query = op.getQuery();
  OpFoldResult numBatches = tensor::getMixedSize(b, loc, query, 0);
  OpFoldResult numHeads = b.getIndexAttr(op.getNumQueryHeads());
  SmallVector<Value> results;
  for (RowsResult kind : resultKinds) {
    SmallVector<OpFoldResult> sizes = {numBatches, numHeads, rows};
    if (kind.width)
      sizes.push_back(b.getIndexAttr(kind.width));
    results.push_back(tensor::EmptyOp::create(b, loc, sizes, kind.type));
  }
  // Batches and head groups: loops that canonicalization removes when they
  // run once.
  auto batchLoop = forLoop(
      index(0), getValueOrCreateConstantIndexOp(b, loc, numBatches), index(1),
      results, [&](Value batchIv, ValueRange batchIter) -> SmallVector<Value> {
        batch = batchIv;
        auto headLoop = forLoop(
            index(0), index(op.getNumQueryHeads()), index(stack), batchIter,
            [&](Value firstHead, ValueRange headIter) -> SmallVector<Value> {
              return buildFullVersion([&]() {
                SmallVector<Value> values = tileFn(firstHead);
                assert(values.size() == resultKinds.size() * stack &&
                       "a value per result and head");
                // Head r of the group: its first `rows` rows.
                OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
                SmallVector<Value> updated(headIter);
                for (int64_t r = 0; r < stack; ++r) {
                  Value head =
                      arith::AddIOp::create(b, loc, firstHead, index(r));
                  for (auto [k, kind, result] :
                       llvm::enumerate(resultKinds, updated)) {
                    SmallVector<OpFoldResult> inner;
                    if (kind.width)
                      inner.push_back(b.getIndexAttr(kind.width));
                    Value headValue = values[k * stack + r];
                    if (rows != rowsTile) {
                      SmallVector<OpFoldResult> offsets = {zero},
                                                sizes = {rows};
                      offsets.append(inner.size(), zero);
                      sizes.append(inner);
                      headValue = tensor::ExtractSliceOp::create(
                          b, loc, headValue, offsets, sizes,
                          SmallVector<OpFoldResult>(sizes.size(), one));
                    }
                    SmallVector<OpFoldResult> offsets = {batch, head, zero};
                    SmallVector<OpFoldResult> sizes = {one, one, rows};
                    offsets.append(inner.size(), zero);
                    sizes.append(inner);
                    result = tensor::InsertSliceOp::create(
                        b, loc, headValue, result, offsets, sizes,
                        SmallVector<OpFoldResult>(sizes.size(), one));
                  }
                }
                return updated;
              });
            });
        return headLoop.getResults();
      });
  return batchLoop.getResults();
}

SmallVector<Value, 2> DenseOnlineSoftmax::build() {
  prepare();
  SmallVector<RowsResult, 2> kinds = {{spec.elementType, op.getValueHeadDim()}};
  // The log-sum-exp, B x Hq x Sq f32, filled tile by tile like the result.
  if (spec.withLse)
    kinds.push_back({f32, 0});
  SmallVector<Value> tiled = buildRows(kinds, [&](Value firstHead) {
    return buildVersions([&]() -> SmallVector<Value> {
      SmallVector<Value> values =
          OnlineSoftmaxTile::build(firstHead, opKeys, opCausalOffset);
      if (lse)
        values.append(splitHeads({lse}));
      return values;
    });
  });
  SmallVector<Value, 2> replacements;
  for (auto [value, type] : llvm::zip(tiled, op->getResultTypes()))
    replacements.push_back(
        value.getType() == type
            ? Value(value)
            : tensor::CastOp::create(b, loc, type, value).getResult());
  return replacements;
}

SmallVector<Value, 4> DenseOnlineSoftmax::buildPartials(Value split,
                                                        Value splits) {
  // The log-sum-exp of a part is not the op's: the merge writes it.
  spec.withLse = false;
  prepare();
  RowsResult row{f32, 0};
  SmallVector<Value> partials = buildRows(
      {{f32, op.getValueHeadDim()}, row, row, row}, [&](Value firstHead) {
        return buildVersions([&]() -> SmallVector<Value> {
          Partial part =
              buildPartial(firstHead, opKeys, opCausalOffset, split, splits);
          return splitHeads({part.out, part.sum, part.max, part.sigma});
        });
      });
  return SmallVector<Value, 4>(partials.begin(), partials.end());
}

SmallVector<Value, 4> mlir::gated_attention::buildOnlineSoftmaxPartials(
    RewriterBase &rewriter, AttentionOp op, const OnlineSoftmaxOptions &options,
    Value split, Value splits) {
  return DenseOnlineSoftmax(rewriter, op, options).buildPartials(split, splits);
}

FailureOr<Value> mlir::gated_attention::decomposeToOnlineSoftmax(
    RewriterBase &rewriter, AttentionOp op,
    const OnlineSoftmaxOptions &autoOptions) {
  OnlineSoftmaxOptions options = chooseBlocks(op, autoOptions);
  if (options.keyBlock <= 0 || options.queryBlock <= 0 ||
      options.diagonalKeyBlock <= 0 ||
      options.keyBlock % options.diagonalKeyBlock)
    return rewriter.notifyMatchFailure(
        op, "block sizes must be positive, the diagonal's a divisor of the "
            "key block");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  SmallVector<Value, 2> results =
      DenseOnlineSoftmax(rewriter, op, options).build();
  rewriter.replaceOp(op, results);
  return results.front();
}

namespace {
struct OnlineSoftmaxPattern : OpRewritePattern<AttentionOp> {
  OnlineSoftmaxPattern(MLIRContext *ctx, const OnlineSoftmaxOptions &options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    return decomposeToOnlineSoftmax(rewriter, op, options);
  }

  OnlineSoftmaxOptions options;
};
} // namespace

void mlir::gated_attention::populateGatedAttentionOnlineSoftmaxPatterns(
    RewritePatternSet &patterns, const OnlineSoftmaxOptions &options) {
  patterns.add<OnlineSoftmaxPattern>(patterns.getContext(), options);
}
