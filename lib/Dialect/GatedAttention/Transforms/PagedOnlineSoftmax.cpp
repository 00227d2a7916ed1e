//===- PagedOnlineSoftmax.cpp - paged attention, tiled, keys read in place
//-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The CPU form of gated_attention.paged_attention: one scf.forall over
// (query tile, head group) for the whole packed batch, each tile the online
// softmax of OnlineSoftmaxTile with its key blocks read from the pages
// through the block table. Nothing is gathered: a tile's K/V block is
// sliced from its page (or assembled from the pieces of the pages it spans
// when P is not a multiple of the key block), and only keys inside the
// sequence are ever read, so garbage (NaN) slots and table entries past a
// sequence's length cannot reach the result.
//
// Tiles follow the GPU kernel's varlen schedule: sequence b's query blocks
// are tiles floor(cu[b] / R) + b, ...; a tile finds its sequence by a
// binary search for the last sequence that starts at or before it, so
// sequences of any length run in parallel, one compile serves every batch,
// and a batch of B sequences costs O(B log B) in finding them.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "IndexBuilder.h"
#include "OnlineSoftmaxTile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <numeric>

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
/// The online softmax of one tile of a paged op: rows [firstRow, + count)
/// of the packed queries (all of one sequence) against that sequence's
/// pages.
class PagedOnlineSoftmax : public OnlineSoftmaxTile {
public:
  PagedOnlineSoftmax(RewriterBase &b, PagedAttentionOp op, int64_t keyBlock)
      : OnlineSoftmaxTile(b, op.getLoc(), specOf(op, keyBlock)), op(op) {}

  /// The tile of `headRows` rows per head (`count` of them real; one per
  /// head when count <= 1, a decode step) for the `stackedHeads` heads from
  /// firstHead, as OnlineSoftmaxTile::buildWithDecodeRows.
  std::pair<Value, OpFoldResult>
  buildTile(int64_t headRows, int64_t stackedHeads, Value seq, Value firstRow,
            Value count, Value firstHead, Value numKeys, Value causalOffset) {
    this->seq = seq;
    this->firstRow = firstRow;
    this->count = count;
    stack = stackedHeads;
    return buildWithDecodeRows(count, headRows, firstHead, numKeys,
                               causalOffset);
  }

private:
  static Spec specOf(PagedAttentionOp op, int64_t keyBlock) {
    int64_t hq = op.getNumQueryHeads(), dv = op.getValueHeadDim();
    RankedTensorType gate = op.getGateType();
    return {op.getQueryType().getElementType(),
            op.getHeadDim(),
            dv,
            hq / op.getNumKVHeads(),
            keyBlock,
            op.getScaleValue(),
            op.getGate(),
            op.getCombine(),
            op.hasGate(),
            gate && gate.getDimSize(1) == 1,
            gate && gate.getDimSize(2) == 1 && dv != 1};
  }

  /// A `rows x width` slice of a [N, H, width] or [NB, P, H, width] tensor:
  /// `rows` consecutive tokens of head `head` from `offsets` (the leading
  /// indices, one or two).
  Value rowSlice(Value source, ArrayRef<OpFoldResult> lead, Value head,
                 OpFoldResult rows) {
    auto type = cast<RankedTensorType>(source.getType());
    int64_t rank = type.getRank(), width = type.getDimSize(rank - 1);
    OpFoldResult one = b.getIndexAttr(1);
    SmallVector<OpFoldResult> offsets(lead), sizes(lead.size() - 1, one);
    offsets.append({head, b.getIndexAttr(0)});
    sizes.append({rows, one, b.getIndexAttr(width)});
    SmallVector<OpFoldResult> strides(rank, one);
    std::optional<int64_t> staticRows = getConstantIntValue(rows);
    auto sliceType = RankedTensorType::get(
        {staticRows.value_or(ShapedType::kDynamic), width},
        type.getElementType());
    return tensor::ExtractSliceOp::create(b, loc, sliceType, source, offsets,
                                          sizes, strides);
  }

  Value rowsOf(Operand operand, Value head) override {
    Value source =
        operand == Operand::Query ? op.getQuery() : op.getGateInput();
    return padRows(rowSlice(source, {firstRow}, head, count), rowsTile);
  }

  /// Keys [kb, kb + cols) in pieces of gcd(P, key block) keys, each within
  /// one page (P and kb are multiples of the piece): a single slice of the
  /// page when the key block divides P. Only pieces holding keys of the
  /// sequence are looked up and read.
  Value keysOf(Operand operand, Value kvHead, Value kb,
               OpFoldResult cols) override {
    Value cache =
        operand == Operand::Key ? op.getKeyCache() : op.getValueCache();
    int64_t page = op.getPageSize(), keyBlock = spec.keyBlock;
    int64_t piece = std::gcd(page, keyBlock);
    auto slotOf = [&](Value key) -> SmallVector<OpFoldResult> {
      Value pageIndex = arith::DivUIOp::create(b, loc, key, index(page));
      Value id = tensor::ExtractOp::create(b, loc, op.getBlockTable(),
                                           ValueRange{seq, pageIndex});
      id = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
      return {id, arith::RemUIOp::create(b, loc, key, index(page)).getResult()};
    };
    if (piece == keyBlock)
      return padRows(rowSlice(cache, slotOf(kb), kvHead, cols),
                     b.getIndexAttr(keyBlock));

    auto type = cast<RankedTensorType>(cache.getType());
    int64_t width = type.getDimSize(3);
    Value block = empty({b.getIndexAttr(keyBlock), b.getIndexAttr(width)},
                        type.getElementType());
    std::optional<int64_t> staticCols = getConstantIntValue(cols);
    // A partial block: the keys past its end are zeros, never page slots.
    if (!staticCols) {
      Value zero = arith::ConstantOp::create(
          b, loc, b.getZeroAttr(type.getElementType()));
      block = linalg::FillOp::create(b, loc, zero, block).getResult(0);
    }
    Value colsValue = getValueOrCreateConstantIndexOp(b, loc, cols);
    Value pieces = arith::CeilDivUIOp::create(b, loc, colsValue, index(piece));
    auto loop = forLoop(
        index(0), pieces, index(1), block,
        [&](Value i, ValueRange iter) -> SmallVector<Value> {
          Value start = arith::MulIOp::create(b, loc, i, index(piece));
          OpFoldResult rows = b.getIndexAttr(piece);
          if (!staticCols) {
            Value left = arith::SubIOp::create(b, loc, colsValue, start);
            rows =
                arith::MinUIOp::create(b, loc, left, index(piece)).getResult();
          }
          Value key = arith::AddIOp::create(b, loc, kb, start);
          Value rowsIn = rowSlice(cache, slotOf(key), kvHead, rows);
          OpFoldResult one = b.getIndexAttr(1);
          return {tensor::InsertSliceOp::create(
              b, loc, rowsIn, iter[0],
              ArrayRef<OpFoldResult>{start, b.getIndexAttr(0)},
              ArrayRef<OpFoldResult>{rows, b.getIndexAttr(width)},
              ArrayRef<OpFoldResult>{one, one})};
        });
    return loop.getResult(0);
  }

  PagedAttentionOp op;
  Value seq, firstRow, count;
};

} // namespace

FailureOr<Value> mlir::gated_attention::tilePagedToOnlineSoftmax(
    RewriterBase &rewriter, PagedAttentionOp op,
    const OnlineSoftmaxOptions &options) {
  if (options.keyBlock <= 0 || options.queryBlock <= 0)
    return rewriter.notifyMatchFailure(op, "block sizes must be positive");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  IndexBuilder ix{rewriter, loc};
  int64_t hq = op.getNumQueryHeads(), dv = op.getValueHeadDim();
  int64_t group = hq / op.getNumKVHeads();
  int64_t stack = stackedHeadsPerTile(group);
  int64_t rowsPerHead = std::max<int64_t>(1, options.queryBlock / stack);

  RankedTensorType resultType = op.getResultType();
  Value tokens = tensor::DimOp::create(rewriter, loc, op.getQuery(), 0);
  Value numSeqs = tensor::DimOp::create(rewriter, loc, op.getSeqLens(), 0);
  Value init = tensor::EmptyOp::create(
      rewriter, loc, resultType.getShape(), resultType.getElementType(),
      resultType.isDynamicDim(0) ? ValueRange{tokens} : ValueRange{});
  // ceildiv(T, R') + B tiles cover every sequence's blocks (at most one
  // idle tile per sequence: buildVarlenFirstTile).
  Value numTiles = ix.add(
      arith::CeilDivUIOp::create(rewriter, loc, tokens, ix.c(rowsPerHead)),
      numSeqs);
  auto forall = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{numTiles, rewriter.getIndexAttr(hq / stack)},
      ValueRange{init}, std::nullopt);
  markOnlineSoftmaxLoop(forall);
  rewriter.setInsertionPoint(forall.getTerminator());
  Value tileId = forall.getInductionVar(0);
  Value firstHead = ix.mul(forall.getInductionVar(1), ix.c(stack));

  // The tile's sequence (the schedule of the GPU kernel, found by a binary
  // search: a linear count per tile made a batch of B sequences cost B^2)
  // and its first tile.
  Value rows = ix.c(rowsPerHead);
  Value seq = buildVarlenTileSequenceSearch(
      rewriter, loc, tileId, numSeqs, rowsPerHead,
      [&](OpBuilder &b, Location l, Value s) {
        return IndexBuilder{b, l}.at(op.getCuSeqlensQ(), {s});
      });
  Value seqFirst = ix.at(op.getCuSeqlensQ(), {seq});
  Value seqQueries =
      ix.sub(ix.at(op.getCuSeqlensQ(), {ix.add(seq, ix.c(1))}), seqFirst);
  // Local queries [i0, i0 + count) of the sequence.
  Value seqStart =
      buildVarlenFirstTile(rewriter, loc, seqFirst, seq, rowsPerHead);
  Value i0 = ix.mul(ix.sub(tileId, seqStart), rows);
  Value zeroIndex = ix.c(0);
  Value count = ix.max(ix.min(ix.sub(seqQueries, i0), rows), zeroIndex);
  Value firstRow = ix.add(seqFirst, i0);
  Value seqLen = ix.at(op.getSeqLens(), {seq});
  // An idle tile reads no key.
  Value numKeys = arith::SelectOp::create(
      rewriter, loc, ix.le(count, zeroIndex), zeroIndex, seqLen);
  // Bottom-right causal per sequence: local query i sees key j iff
  // j <= i + L - q; tile row r is local query i0 + r.
  Value causalOffset =
      op.getCausal() ? ix.sub(ix.add(i0, seqLen), seqQueries) : Value();

  // Decode tiles (one query) compute one row per head, not R'.
  PagedOnlineSoftmax tile(rewriter, op, options.keyBlock);
  auto [out, headRowsFold] =
      tile.buildTile(rowsPerHead, stack, seq, firstRow, count, firstHead,
                     numKeys, causalOffset);
  Value headRows = getValueOrCreateConstantIndexOp(rewriter, loc, headRowsFold);

  // Head r of the tile: its rows [r * headRows, + count) go to tokens
  // [firstRow, + count) of head firstHead + r.
  OpFoldResult one = rewriter.getIndexAttr(1), zero = rewriter.getIndexAttr(0);
  OpFoldResult dvSize = rewriter.getIndexAttr(dv);
  SmallVector<Value> headOuts;
  for (int64_t r = 0; r < stack; ++r)
    headOuts.push_back(tensor::ExtractSliceOp::create(
        rewriter, loc, out,
        ArrayRef<OpFoldResult>{ix.mul(headRows, ix.c(r)), zero},
        ArrayRef<OpFoldResult>{count, dvSize},
        ArrayRef<OpFoldResult>{one, one}));
  SmallVector<Value> heads;
  for (int64_t r = 0; r < stack; ++r)
    heads.push_back(ix.add(firstHead, ix.c(r)));
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  for (int64_t r = 0; r < stack; ++r)
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, headOuts[r], forall.getRegionOutArgs()[0],
        ArrayRef<OpFoldResult>{firstRow, heads[r], zero},
        ArrayRef<OpFoldResult>{count, one, dvSize},
        ArrayRef<OpFoldResult>{one, one, one});
  rewriter.replaceOp(op, forall.getResult(0));
  return forall.getResult(0);
}
