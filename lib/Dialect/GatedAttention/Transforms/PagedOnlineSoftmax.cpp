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
// Split-KV (kv-splits, SplitKeys.h): a decode step of one sequence has
// Hq / R tiles that do work, fewer than a CPU's threads. The split form runs
// one scf.forall over (part, tile, head group); each writes the partials
// of its part of the tile's keys for the tile's rows, indexed by query
// token, not by tile (whose count is data dependent): out [N, T, Hq, Dv],
// sum, max, sigma [N, T, Hq], as the GPU's paged split kernel indexes
// them. The merge over (T, Hq) is the dense op's; it applies the gate once.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "IndexBuilder.h"
#include "OnlineSoftmaxTile.h"
#include "SplitKeys.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <numeric>

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
/// One (query tile, head group) of the varlen schedule: its sequence, its
/// rows [firstRow, + count) of the packed queries (local queries
/// [i0, + count) of the sequence), its first query head, the keys it reads
/// and the causal offset (null without causal).
struct PagedTileSite {
  Value seq, firstRow, count, firstHead, numKeys, causalOffset;
};

/// The online softmax of one tile of a paged op: rows [firstRow, + count)
/// of the packed queries (all of one sequence) against that sequence's
/// pages.
class PagedOnlineSoftmax : public OnlineSoftmaxTile {
public:
  PagedOnlineSoftmax(RewriterBase &b, PagedAttentionOp op, int64_t keyBlock)
      : OnlineSoftmaxTile(b, op.getLoc(), specOf(op, keyBlock)), op(op) {}

  /// The output of the tile at `site` with `headRows` rows per head
  /// (`count` of them real; one per head when count <= 1, a decode step)
  /// for each of its `stackedHeads` heads, as
  /// OnlineSoftmaxTile::buildWithDecodeRows.
  SmallVector<Value> buildTile(int64_t headRows, int64_t stackedHeads,
                               const PagedTileSite &site) {
    at(site, stackedHeads);
    return buildWithDecodeRows(site.count, headRows, site.firstHead,
                               site.numKeys, site.causalOffset);
  }

  /// The same tile's partials of part `split` of `splits` of its keys
  /// (OnlineSoftmaxTile::Partial: out, sum, max, sigma), each head's in
  /// turn (OnlineSoftmaxTile::splitHeads).
  SmallVector<Value> buildPartialTile(int64_t headRows, int64_t stackedHeads,
                                      const PagedTileSite &site, Value split,
                                      Value splits) {
    at(site, stackedHeads);
    return buildWithDecodeRows(site.count, headRows, [&] {
      Partial part = buildPartial(site.firstHead, site.numKeys,
                                  site.causalOffset, split, splits);
      return splitHeads({part.out, part.sum, part.max, part.sigma});
    });
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
    int64_t page = op.getPageSize(), keyBlock = blockKeys;
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

  void at(const PagedTileSite &site, int64_t stackedHeads) {
    seq = site.seq;
    firstRow = site.firstRow;
    count = site.count;
    stack = stackedHeads;
  }

  PagedAttentionOp op;
  Value seq, firstRow, count;
};

} // namespace

namespace {
/// The lowering of one paged op: the tiles' forall, or the partials' forall
/// over (part, tile, head group) and their merge (split-KV).
class PagedLowering {
public:
  PagedLowering(RewriterBase &b, PagedAttentionOp op,
                const OnlineSoftmaxOptions &options)
      : b(b), loc(op.getLoc()), ix{b, loc}, op(op), options(options) {
    int64_t hq = op.getNumQueryHeads();
    stack = stackedHeadsPerTile(hq / op.getNumKVHeads());
    groups = hq / stack;
    rowsPerHead = std::max<int64_t>(1, options.queryBlock / stack);
    tokens = tensor::DimOp::create(b, loc, op.getQuery(), 0);
    numSeqs = tensor::DimOp::create(b, loc, op.getSeqLens(), 0);
    // ceildiv(T, R') + B tiles cover every sequence's blocks (at most one
    // idle tile per sequence: buildVarlenFirstTile).
    numTiles = ix.add(
        arith::CeilDivUIOp::create(b, loc, tokens, ix.c(rowsPerHead)), numSeqs);
  }

  /// The parts: options.kvSplits, or under kAutoKeySplits the rule of
  /// Transforms.h over the tiles that can hold queries and the longest
  /// sequence (decided at run time).
  Value numSplits();

  /// The tiles [0, tiles) of the schedule written into `dest` ([T, Hq, Dv]).
  Value unsplit(Value tiles, Value dest);

  /// Tokens [0, splitTokens) (all or none of them) through `splits` parts of
  /// each tile's keys, tiles [0, tiles), merged into `dest`.
  Value split(Value splits, Value tiles, OpFoldResult splitTokens, Value dest);

  Value numTiles, tokens;

private:
  /// Tile `tileId` of head group `group`.
  PagedTileSite locate(Value tileId, Value group);
  /// Rows [0, count) of `heads[r]` (head r's rows of a tile's output or
  /// partial) into `dest` at `lead` + (tokens of the tile, head
  /// firstHead + r) for every stacked head r.
  void insertHeadRows(scf::ForallOp forall, ValueRange heads, Value dest,
                      ArrayRef<OpFoldResult> lead, const PagedTileSite &site);

  RewriterBase &b;
  Location loc;
  IndexBuilder ix;
  PagedAttentionOp op;
  const OnlineSoftmaxOptions &options;
  int64_t stack, groups, rowsPerHead;
  Value numSeqs;
};
} // namespace

PagedTileSite PagedLowering::locate(Value tileId, Value group) {
  // The tile's sequence (the schedule of the GPU kernel, found by a binary
  // search: a linear count per tile made a batch of B sequences cost B^2)
  // and its first tile.
  Value rows = ix.c(rowsPerHead);
  Value seq = buildVarlenTileSequenceSearch(
      b, loc, tileId, numSeqs, rowsPerHead,
      [&](OpBuilder &nb, Location l, Value s) {
        return IndexBuilder{nb, l}.at(op.getCuSeqlensQ(), {s});
      });
  Value seqFirst = ix.at(op.getCuSeqlensQ(), {seq});
  Value seqQueries =
      ix.sub(ix.at(op.getCuSeqlensQ(), {ix.add(seq, ix.c(1))}), seqFirst);
  // Local queries [i0, i0 + count) of the sequence.
  Value seqStart = buildVarlenFirstTile(b, loc, seqFirst, seq, rowsPerHead);
  Value i0 = ix.mul(ix.sub(tileId, seqStart), rows);
  Value zero = ix.c(0);
  Value count = ix.max(ix.min(ix.sub(seqQueries, i0), rows), zero);
  Value seqLen = ix.at(op.getSeqLens(), {seq});
  // Bottom-right causal per sequence: local query i sees key j iff
  // j <= i + L - q; tile row r is local query i0 + r.
  Value causalOffset =
      op.getCausal() ? ix.sub(ix.add(i0, seqLen), seqQueries) : Value();
  // Causal: no key past the last row's, j < i0 + count + L - q (so that
  // the parts of a split share the keys the tile sees).
  Value numKeys = seqLen;
  if (causalOffset)
    numKeys = ix.max(ix.min(seqLen, ix.add(causalOffset, count)), zero);
  // An idle tile reads no key.
  numKeys = arith::SelectOp::create(b, loc, ix.le(count, zero), zero, numKeys);
  Value firstRow = ix.add(seqFirst, i0);
  Value firstHead = ix.mul(group, ix.c(stack));
  return {seq, firstRow, count, firstHead, numKeys, causalOffset};
}

void PagedLowering::insertHeadRows(scf::ForallOp forall, ValueRange heads,
                                   Value dest, ArrayRef<OpFoldResult> lead,
                                   const PagedTileSite &site) {
  assert(static_cast<int64_t>(heads.size()) == stack && "a value per head");
  auto type = cast<RankedTensorType>(heads.front().getType());
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  // Rows, then the values' width where there is one.
  SmallVector<OpFoldResult> width;
  if (type.getRank() == 2)
    width.push_back(b.getIndexAttr(type.getDimSize(1)));
  SmallVector<Value> rows;
  for (Value head : heads) {
    SmallVector<OpFoldResult> offsets = {zero};
    SmallVector<OpFoldResult> sizes = {site.count};
    offsets.append(width.size(), zero);
    sizes.append(width);
    rows.push_back(tensor::ExtractSliceOp::create(
        b, loc, head, offsets, sizes,
        SmallVector<OpFoldResult>(sizes.size(), one)));
  }
  SmallVector<Value> headIds;
  for (int64_t r = 0; r < stack; ++r)
    headIds.push_back(ix.add(site.firstHead, ix.c(r)));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  for (int64_t r = 0; r < stack; ++r) {
    SmallVector<OpFoldResult> offsets(lead), sizes(lead.size(), one);
    offsets.append({site.firstRow, headIds[r]});
    sizes.append({site.count, one});
    offsets.append(width.size(), zero);
    sizes.append(width);
    tensor::ParallelInsertSliceOp::create(
        b, loc, rows[r], dest, offsets, sizes,
        SmallVector<OpFoldResult>(sizes.size(), one));
  }
}

Value PagedLowering::numSplits() {
  if (options.kvSplits != kAutoKeySplits)
    return ix.c(options.kvSplits);
  // The tiles that can hold queries: at most one per token.
  Value tiles =
      ix.mul(arith::MinUIOp::create(b, loc, tokens, numTiles), ix.c(groups));
  Value longest =
      buildForLoop(b, loc, ix.c(0), numSeqs, ix.c(1), ix.c(0),
                   [&](Value s, ValueRange acc) -> SmallVector<Value> {
                     return {ix.max(acc[0], ix.at(op.getSeqLens(), {s}))};
                   })
          .getResult(0);
  return buildAutoKeySplits(b, loc, tiles, longest, options.threads);
}

Value PagedLowering::unsplit(Value tiles, Value dest) {
  SmallVector<Value, 2> ivs;
  auto forall =
      buildTileForall(b, loc, {tiles, b.getIndexAttr(groups)},
                      {b.getIndexAttr(1), b.getIndexAttr(1)}, dest, ivs);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  PagedTileSite site = locate(ivs[0], ivs[1]);
  // Decode tiles (one query) compute one row per head, not R'.
  PagedOnlineSoftmax tile(b, op, options.keyBlock);
  SmallVector<Value> heads = tile.buildTile(rowsPerHead, stack, site);
  insertHeadRows(forall, heads, forall.getRegionIterArgs()[0], {}, site);
  return forall.getResult(0);
}

Value PagedLowering::split(Value splits, Value tiles, OpFoldResult splitTokens,
                           Value dest) {
  OpFoldResult heads = b.getIndexAttr(op.getNumQueryHeads());
  SmallVector<Value> scratch =
      buildKeySplitScratch(b, loc, getAsOpFoldResult(splits),
                           {splitTokens, heads}, op.getValueHeadDim());
  SmallVector<Value, 3> ivs;
  OpFoldResult one = b.getIndexAttr(1);
  auto forall = buildTileForall(
      b, loc, {getAsOpFoldResult(splits), tiles, b.getIndexAttr(groups)},
      {one, one, one}, scratch, ivs);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    PagedTileSite site = locate(ivs[1], ivs[2]);
    PagedOnlineSoftmax tile(b, op, options.keyBlock);
    SmallVector<Value> heads =
        tile.buildPartialTile(rowsPerHead, stack, site, ivs[0], splits);
    for (auto [k, out] : llvm::enumerate(forall.getRegionIterArgs()))
      insertHeadRows(forall, ArrayRef<Value>(heads).slice(k * stack, stack),
                     out, {ivs[0]}, site);
  }
  KeySplitGate gate{Value(), AffineMap(), op.getGate(), op.getCombine()};
  if (op.hasGate()) {
    // The split tokens of the gate: every operand of the merge spans its
    // domain (SplitKeys.cpp says why).
    gate.input = op.getGateInput();
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, gate.input);
    sizes[0] = splitTokens;
    gate.input = tensor::ExtractSliceOp::create(
        b, loc, gate.input, SmallVector<OpFoldResult>(3, b.getIndexAttr(0)),
        sizes, SmallVector<OpFoldResult>(3, one));
    RankedTensorType type = op.getGateType();
    // (token, head, value) loops.
    gate.map =
        AffineMap::get(3, 0,
                       {b.getAffineDimExpr(0),
                        type.getDimSize(1) == 1 ? b.getAffineConstantExpr(0)
                                                : b.getAffineDimExpr(1),
                        type.getDimSize(2) == 1 ? b.getAffineConstantExpr(0)
                                                : b.getAffineDimExpr(2)},
                       b.getContext());
  }
  ValueRange parts = forall.getResults();
  return buildKeySplitMerge(b, loc, {parts[0], parts[1], parts[2], parts[3]},
                            splits, {splitTokens, heads}, gate, dest)
      .front();
}

FailureOr<Value> mlir::gated_attention::tilePagedToOnlineSoftmax(
    RewriterBase &rewriter, PagedAttentionOp op,
    const OnlineSoftmaxOptions &autoOptions) {
  OnlineSoftmaxOptions options = chooseBlocks(op, autoOptions);
  if (options.keyBlock <= 0 || options.queryBlock <= 0)
    return rewriter.notifyMatchFailure(op, "block sizes must be positive");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  IndexBuilder ix{rewriter, loc};
  PagedLowering lowering(rewriter, op, options);
  RankedTensorType resultType = op.getResultType();
  Value init = tensor::EmptyOp::create(
      rewriter, loc, resultType.getShape(), resultType.getElementType(),
      resultType.isDynamicDim(0) ? ValueRange{lowering.tokens} : ValueRange{});
  Value splits = lowering.numSplits();
  std::optional<int64_t> known = getConstantIntValue(splits);
  Value result;
  if (known && *known == 1) {
    result = lowering.unsplit(lowering.numTiles, init);
  } else if (known) {
    result = lowering.split(splits, lowering.numTiles,
                            getAsOpFoldResult(lowering.tokens), init);
  } else {
    // Split or not at run time, without an scf.if (whose branches' results
    // bufferization would copy): the unsplit tiles run over all tiles or
    // none, the split form over the others and merges all tokens or none
    // into the same result (as the dense op's, SplitKeys.cpp).
    Value many = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt,
                                       splits, ix.c(1));
    auto either = [&](Value ifSplit, Value ifNot) -> Value {
      return arith::SelectOp::create(rewriter, loc, many, ifSplit, ifNot);
    };
    Value zero = ix.c(0);
    result = lowering.unsplit(either(zero, lowering.numTiles), init);
    Value splitTokens = either(lowering.tokens, zero);
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, result);
    sizes[0] = splitTokens;
    SmallVector<OpFoldResult> offsets(3, rewriter.getIndexAttr(0)),
        strides(3, rewriter.getIndexAttr(1));
    Value dest = tensor::ExtractSliceOp::create(rewriter, loc, result, offsets,
                                                sizes, strides);
    Value merged = lowering.split(splits, either(lowering.numTiles, zero),
                                  splitTokens, dest);
    result = tensor::InsertSliceOp::create(rewriter, loc, merged, result,
                                           offsets, sizes, strides);
  }
  rewriter.replaceOp(op, result);
  return result;
}
