//===- SplitKeys.cpp - split-KV for the tiled CPU online softmax ----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// A decode step of one sequence has fewer (batch, head group, query block)
// tiles than a CPU has threads (Hkv of them with GQA packing). Split-KV
// (flash-decoding) gives the threads parts of each tile's keys instead:
// one scf.forall over (part, tile) writes each part's unnormalized f32
// partials (O_i, l_i, m_i and the overflow scale sigma_i) into scratch,
// then a merge computes, per row,
//
//   m = max_i m_i,  w_i = exp(m_i - m) (buildMergeWeight) * sigma / sigma_i
//   O = sum_i w_i O_i / sum_i w_i l_i,   sigma = min_i sigma_i
//
// (the powers of two sigma_i / sigma put the parts' weights on one scale;
// each part's scale counts the parts, so the merged sums stay below 2^126)
// and applies the gate once, to the merged row. The GPU's merge kernel
// weighs its parts with the same helper. The auto rule, the partials'
// forall and the merge (SplitKeys.h) also serve the paged op
// (PagedOnlineSoftmax.cpp), whose partials are indexed by query token.
//
//===----------------------------------------------------------------------===//

#include "SplitKeys.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "OnlineSoftmaxTile.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <limits>

using namespace mlir;
using namespace mlir::gated_attention;

using utils::IteratorType;

FailureOr<int64_t> mlir::gated_attention::parseKeySplits(StringRef value) {
  if (value == "auto")
    return kAutoKeySplits;
  int64_t count;
  if (value.getAsInteger(10, count) || count < 1 || count > kMaxKeySplits)
    return failure();
  return count;
}

Value mlir::gated_attention::buildAutoKeySplits(OpBuilder &b, Location loc,
                                                Value tiles, Value keys,
                                                int64_t threads) {
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto fold = [&](auto opTag, Value l, Value r) -> Value {
    return b.createOrFold<decltype(opTag)>(loc, l, r);
  };
  Value threadCount = index(threads);
  Value parts = fold(arith::MinUIOp(),
                     fold(arith::CeilDivUIOp(), threadCount,
                          fold(arith::MaxUIOp(), tiles, index(1))),
                     fold(arith::DivUIOp(), keys, index(kMinKeysPerSplit)));
  parts = fold(arith::MinUIOp(), parts, index(kMaxKeySplits));
  parts = fold(arith::MaxUIOp(), parts, index(1));
  Value fewTiles = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ult,
                                                 tiles, threadCount);
  return b.createOrFold<arith::SelectOp>(loc, fewTiles, parts, index(1));
}

scf::ForallOp mlir::gated_attention::buildTileForall(
    OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
    ArrayRef<OpFoldResult> steps, ValueRange outs,
    SmallVectorImpl<Value> &ivs) {
  auto runsOnce = [](OpFoldResult size, OpFoldResult step) {
    std::optional<int64_t> n = getConstantIntValue(size);
    return n && *n <= *getConstantIntValue(step);
  };
  SmallVector<OpFoldResult> upper, loopSteps;
  for (auto [size, step] : llvm::zip_equal(sizes, steps)) {
    if (runsOnce(size, step))
      continue;
    upper.push_back(size);
    loopSteps.push_back(step);
  }
  auto forall = scf::ForallOp::create(
      b, loc, SmallVector<OpFoldResult>(upper.size(), b.getIndexAttr(0)), upper,
      loopSteps, outs, std::nullopt);
  markOnlineSoftmaxLoop(forall);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  // Owned: getInductionVars() returns a temporary.
  SmallVector<Value> loopIvs = forall.getInductionVars();
  ArrayRef<Value> nextIvs = loopIvs;
  for (auto [size, step] : llvm::zip_equal(sizes, steps)) {
    if (runsOnce(size, step)) {
      ivs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
      continue;
    }
    ivs.push_back(nextIvs.front());
    nextIvs = nextIvs.drop_front();
  }
  return forall;
}

SmallVector<Value> mlir::gated_attention::buildKeySplitScratch(
    OpBuilder &b, Location loc, OpFoldResult splits,
    ArrayRef<OpFoldResult> rowSizes, int64_t valueHeadDim) {
  SmallVector<OpFoldResult> partRows = {splits};
  partRows.append(rowSizes.begin(), rowSizes.end());
  SmallVector<OpFoldResult> outSizes(partRows);
  outSizes.push_back(b.getIndexAttr(valueHeadDim));
  Type f32 = b.getF32Type();
  SmallVector<Value> scratch = {tensor::EmptyOp::create(b, loc, outSizes, f32)};
  for (int i = 0; i < 3; ++i)
    scratch.push_back(tensor::EmptyOp::create(b, loc, partRows, f32));
  return scratch;
}

namespace {
/// The merge of buildKeySplitMerge over `n` row dimensions.
class KeySplitMerge {
public:
  KeySplitMerge(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> rowSizes)
      : b(b), loc(loc), rowSizes(rowSizes), n(rowSizes.size()),
        f32(b.getF32Type()) {}

  SmallVector<Value> build(const KeySplitPartials &parts, Value splits,
                           const KeySplitGate &gate, Value dest, Value lseDest);

private:
  Value filled(ArrayRef<OpFoldResult> sizes, double v) {
    Value value = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
    Value init = tensor::EmptyOp::create(b, loc, sizes, f32);
    return linalg::FillOp::create(b, loc, value, init).getResult(0);
  }
  /// The map from `dims` loops to loops `first` .. `first + count - 1`,
  /// after `lead` (if given).
  AffineMap dimsMap(unsigned dims, std::optional<unsigned> lead, unsigned first,
                    unsigned count) {
    SmallVector<AffineExpr> exprs;
    if (lead)
      exprs.push_back(b.getAffineDimExpr(*lead));
    for (unsigned d = first; d < first + count; ++d)
      exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(dims, 0, exprs, b.getContext());
  }
  /// A reduction over the parts (loops (rows..., part); the parts' tensors
  /// are [part, rows...]) into `init`.
  Value reduceParts(ValueRange ins, Value init,
                    function_ref<Value(OpBuilder &, ValueRange)> body) {
    SmallVector<AffineMap> maps(ins.size(), dimsMap(n + 1, n, 0, n));
    maps.push_back(dimsMap(n + 1, std::nullopt, 0, n));
    SmallVector<IteratorType> iterators(n, IteratorType::parallel);
    iterators.push_back(IteratorType::reduction);
    return buildGeneric(b, loc, ins, init, maps, iterators, body);
  }

  OpBuilder &b;
  Location loc;
  ArrayRef<OpFoldResult> rowSizes;
  unsigned n;
  Type f32;
};
} // namespace

SmallVector<Value> KeySplitMerge::build(const KeySplitPartials &parts,
                                        Value splits, const KeySplitGate &gate,
                                        Value dest, Value lseDest) {
  auto par = IteratorType::parallel;
  Value mergedMax = reduceParts(
      parts.max, filled(rowSizes, -std::numeric_limits<double>::infinity()),
      [&](OpBuilder &nb, ValueRange a) -> Value {
        // NaN parts make the row NaN.
        return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
      });
  Value minSigma =
      reduceParts(parts.sigma, filled(rowSizes, 1.0),
                  [&](OpBuilder &nb, ValueRange a) -> Value {
                    return arith::MinimumFOp::create(nb, loc, a[0], a[1]);
                  });
  // w_i = exp(m_i - shift(m)) sigma / sigma_i, [part, rows...].
  AffineMap id = b.getMultiDimIdentityMap(n + 1),
            rowOfPart = dimsMap(n + 1, std::nullopt, 1, n);
  SmallVector<OpFoldResult> partSizes = {getAsOpFoldResult(splits)};
  partSizes.append(rowSizes.begin(), rowSizes.end());
  Value weights = buildGeneric(
      b, loc, {parts.max, mergedMax, parts.sigma, minSigma},
      tensor::EmptyOp::create(b, loc, partSizes, f32),
      {id, rowOfPart, id, rowOfPart, id}, SmallVector<IteratorType>(n + 1, par),
      [&](OpBuilder &nb, ValueRange a) -> Value {
        Value w = buildMergeWeight(nb, loc, a[0], a[1]);
        Value rescale = arith::DivFOp::create(nb, loc, a[3], a[2]);
        return arith::MulFOp::create(nb, loc, w, rescale);
      });
  auto weightedSum = [&](OpBuilder &nb, ValueRange a) -> Value {
    Value term = arith::MulFOp::create(nb, loc, a[0], a[1]);
    return arith::AddFOp::create(nb, loc, a[2], term);
  };
  Value mergedSum =
      reduceParts({weights, parts.sum}, filled(rowSizes, 0.0), weightedSum);

  // The gated result, combine(sum_i w_i O_i / l, act(G)) (0 for a row
  // without keys), computed in the destination: the parts are summed in
  // the body, so no f32 tensor of the result's size is needed.
  SmallVector<Value> ins = {mergedSum};
  SmallVector<AffineMap> maps = {dimsMap(n + 1, std::nullopt, 0, n)};
  if (gate.input) {
    ins.push_back(gate.input);
    maps.push_back(gate.map);
  }
  maps.push_back(id);
  Type elementType = cast<RankedTensorType>(dest.getType()).getElementType();
  Value result = buildGeneric(
      b, loc, ins, dest, maps, SmallVector<IteratorType>(n + 1, par),
      [&](OpBuilder &nb, ValueRange a) -> Value {
        SmallVector<Value> at;
        for (unsigned d = 0; d <= n; ++d)
          at.push_back(linalg::IndexOp::create(nb, loc, d));
        Value zero = arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(0));
        Value merged =
            buildForLoop(
                nb, loc, arith::ConstantIndexOp::create(nb, loc, 0), splits,
                arith::ConstantIndexOp::create(nb, loc, 1), zero,
                [&](Value part, ValueRange acc) -> SmallVector<Value> {
                  SmallVector<Value> partRowAt = {part};
                  partRowAt.append(at.begin(), at.end() - 1);
                  Value w =
                      tensor::ExtractOp::create(nb, loc, weights, partRowAt);
                  partRowAt.push_back(at.back());
                  Value o =
                      tensor::ExtractOp::create(nb, loc, parts.out, partRowAt);
                  return {weightedSum(nb, {w, o, acc[0]})};
                })
                .getResult(0);
        Value y = arith::MulFOp::create(nb, loc, merged,
                                        buildInverseRowSum(nb, loc, a[0]));
        Value g;
        if (gate.input)
          g = a[1].getType() == f32
                  ? a[1]
                  : arith::ExtFOp::create(nb, loc, f32, a[1]).getResult();
        return buildGatedOutput(nb, loc, y, g, gate.gate, gate.combine,
                                elementType);
      });
  SmallVector<Value> results = {result};
  // L = shift(m) + log(l) - log(sigma): the merged weights were
  // exp(s - shift(m)) sigma.
  if (lseDest) {
    AffineMap idRows = b.getMultiDimIdentityMap(n);
    results.push_back(buildGeneric(
        b, loc, {mergedMax, mergedSum, minSigma}, lseDest,
        {idRows, idRows, idRows, idRows}, SmallVector<IteratorType>(n, par),
        [&](OpBuilder &nb, ValueRange a) -> Value {
          Value lse =
              buildLogSumExp(nb, loc, buildSoftmaxShift(nb, loc, a[0]), a[1]);
          return arith::SubFOp::create(nb, loc, lse,
                                       math::LogOp::create(nb, loc, a[2]));
        }));
  }
  return results;
}

SmallVector<Value> mlir::gated_attention::buildKeySplitMerge(
    OpBuilder &b, Location loc, const KeySplitPartials &parts, Value splits,
    ArrayRef<OpFoldResult> rowSizes, const KeySplitGate &gate, Value dest,
    Value lseDest) {
  return KeySplitMerge(b, loc, rowSizes)
      .build(parts, splits, gate, dest, lseDest);
}

namespace {
/// The split form of one dense op: the partials' forall and the merge.
class KeySplit {
public:
  KeySplit(RewriterBase &b, AttentionOp op, const OnlineSoftmaxOptions &options)
      : b(b), loc(op.getLoc()), op(op), options(options), f32(b.getF32Type()) {
    Value query = op.getQuery();
    batches = tensor::getMixedSize(b, loc, query, 0);
    rows = tensor::getMixedSize(b, loc, query, 2);
    group = stackedHeadsPerTile(op.getGroupSize());
    rowsPerHead = queryRowsPerHead(op, options);
  }

  /// The parts the keys are split into: options.kvSplits, or under
  /// kAutoKeySplits the rule of Transforms.h (a constant when the sizes
  /// are).
  Value numSplits();

  /// The op's replacements (result, log-sum-exp if asked) computed into
  /// `dests` through `splits` parts.
  SmallVector<Value> build(Value splits, ValueRange dests);

  /// Empty tensors of the op's result shapes (rows, batches as the
  /// query's).
  SmallVector<Value> destinations();

  /// Splits only batches [0, n) (numSplits counts all of them).
  void restrictBatches(OpFoldResult n) {
    batches = n;
    restricted = true;
  }

private:
  /// The partials' scf.forall: out [N, B, Hq, Sq, Dv], sum, max, sigma
  /// [N, B, Hq, Sq].
  SmallVector<Value> partials(Value splits);
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  RewriterBase &b;
  Location loc;
  AttentionOp op;
  const OnlineSoftmaxOptions &options;
  Type f32;
  OpFoldResult batches, rows;
  int64_t group, rowsPerHead;
  bool restricted = false;
};
} // namespace

Value KeySplit::numSplits() {
  if (options.kvSplits != kAutoKeySplits)
    return index(options.kvSplits);
  // tiles = B (Hq / R) ceildiv(Sq, rows per head), as gated-attention-tile
  // makes them.
  auto fold = [&](auto opTag, Value l, Value r) -> Value {
    return b.createOrFold<decltype(opTag)>(loc, l, r);
  };
  Value tiles =
      fold(arith::MulIOp(), getValueOrCreateConstantIndexOp(b, loc, batches),
           index(op.getNumQueryHeads() / group));
  tiles = fold(arith::MulIOp(), tiles,
               fold(arith::CeilDivUIOp(),
                    getValueOrCreateConstantIndexOp(b, loc, rows),
                    index(rowsPerHead)));
  Value keys = b.createOrFold<tensor::DimOp>(loc, op.getKey(), 2);
  return buildAutoKeySplits(b, loc, tiles, keys, options.threads);
}

SmallVector<Value> KeySplit::destinations() {
  OpFoldResult heads = b.getIndexAttr(op.getNumQueryHeads());
  SmallVector<Value> dests = {tensor::EmptyOp::create(
      b, loc,
      SmallVector<OpFoldResult>{batches, heads, rows,
                                b.getIndexAttr(op.getValueHeadDim())},
      op.getResultType().getElementType())};
  if (op.hasLse())
    dests.push_back(tensor::EmptyOp::create(
        b, loc, SmallVector<OpFoldResult>{batches, heads, rows}, f32));
  return dests;
}

SmallVector<Value> KeySplit::partials(Value splits) {
  OpFoldResult heads = b.getIndexAttr(op.getNumQueryHeads());
  OpFoldResult dv = b.getIndexAttr(op.getValueHeadDim());
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Value> scratch =
      buildKeySplitScratch(b, loc, getAsOpFoldResult(splits),
                           {batches, heads, rows}, op.getValueHeadDim());
  SmallVector<Value, 4> ivs;
  auto forall = buildTileForall(
      b, loc, {getAsOpFoldResult(splits), batches, heads, rows},
      {one, one, b.getIndexAttr(group), b.getIndexAttr(rowsPerHead)}, scratch,
      ivs);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value split = ivs[0], batch = ivs[1], head = ivs[2], row = ivs[3];
  // The tile: rows [row, row + min(rows per head, Sq - row)) of heads
  // [head, head + group), keys as the tiling interface slices them
  // (causal: up to the last row's).
  AffineExpr r, n;
  bindDims(b.getContext(), r, n);
  OpFoldResult tileRows = affine::makeComposedFoldedAffineMin(
      b, loc,
      AffineMap::get(
          2, 0, {getAffineConstantExpr(rowsPerHead, b.getContext()), n - r},
          b.getContext()),
      {row, rows});
  FailureOr<TilingResult> tiled =
      cast<TilingInterface>(op.getOperation())
          .getTiledImplementation(b, {batch, head, row},
                                  {one, b.getIndexAttr(group), tileRows});
  assert(succeeded(tiled) && "the op's tiles were checked by the caller");
  auto tile = cast<AttentionOp>(tiled->tiledOps.back());
  OnlineSoftmaxOptions tileOptions = options;
  tileOptions.decodeVariant = !getConstantIntValue(rows);
  SmallVector<Value, 4> parts =
      buildOnlineSoftmaxPartials(b, tile, tileOptions, split, splits);
  b.eraseOp(tile);

  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [part, dest] : llvm::zip_equal(parts, forall.getRegionIterArgs())) {
    SmallVector<OpFoldResult> offsets = {split, batch, head, row};
    SmallVector<OpFoldResult> sizes = {one, one, b.getIndexAttr(group),
                                       tileRows};
    if (cast<RankedTensorType>(part.getType()).getRank() == 4) {
      offsets.push_back(zero);
      sizes.push_back(dv);
    }
    tensor::ParallelInsertSliceOp::create(
        b, loc, part, dest, offsets, sizes,
        SmallVector<OpFoldResult>(sizes.size(), one));
  }
  return forall.getResults();
}

SmallVector<Value> KeySplit::build(Value splits, ValueRange dests) {
  SmallVector<Value> parts = partials(splits);
  KeySplitGate gate{Value(), AffineMap(), op.getGate(), op.getCombine()};
  if (op.hasGate()) {
    // Only the split batches of the gate: every operand of the merge must
    // span its domain, or canonicalization takes the gate's static batch
    // count for the run-time one (0 when the unsplit form runs) and the
    // merge overwrites the unsplit result from partials it never wrote.
    gate.input = op.getGateInput();
    if (restricted) {
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(b, loc, gate.input);
      sizes[0] = batches;
      gate.input = tensor::ExtractSliceOp::create(
          b, loc, gate.input, SmallVector<OpFoldResult>(4, b.getIndexAttr(0)),
          sizes, SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
    }
    // (b, h, i, d) loops.
    SmallVector<AffineExpr> at = {
        b.getAffineDimExpr(0),
        op.isGateShared() ? b.getAffineConstantExpr(0) : b.getAffineDimExpr(1),
        b.getAffineDimExpr(2),
        op.isGateHeadwise() ? b.getAffineConstantExpr(0)
                            : b.getAffineDimExpr(3)};
    gate.map = AffineMap::get(4, 0, at, b.getContext());
  }
  OpFoldResult heads = b.getIndexAttr(op.getNumQueryHeads());
  return buildKeySplitMerge(b, loc, {parts[0], parts[1], parts[2], parts[3]},
                            splits, {batches, heads, rows}, gate, dests[0],
                            op.hasLse() ? dests[1] : Value());
}

/// `values` cast to `types` where they differ.
static SmallVector<Value> castTo(OpBuilder &b, Location loc, ValueRange values,
                                 TypeRange types) {
  SmallVector<Value> cast;
  for (auto [value, type] : llvm::zip_equal(values, types))
    cast.push_back(value.getType() == type
                       ? value
                       : tensor::CastOp::create(b, loc, type, value));
  return cast;
}

FailureOr<Value>
mlir::gated_attention::tileWithKeySplits(RewriterBase &rewriter, AttentionOp op,
                                         const OnlineSoftmaxOptions &options) {
  OnlineSoftmaxOptions unsplit = options;
  unsplit.kvSplits = 1;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  KeySplit split(rewriter, op, options);
  Value splits = split.numSplits();
  std::optional<int64_t> known = getConstantIntValue(splits);
  if (known && *known == 1)
    return tileToOnlineSoftmax(rewriter, op, unsplit);
  Location loc = op.getLoc();
  if (known) {
    SmallVector<Value> results =
        castTo(rewriter, loc, split.build(splits, split.destinations()),
               op->getResultTypes());
    rewriter.replaceOp(op, results);
    return results.front();
  }
  // Split or not at run time, without an scf.if (whose branches' results
  // bufferization would copy into the caller's buffer): the unsplit tiles
  // run over batches [0, Bu), the split over [0, B - Bu), Bu = B or 0, each
  // into its batches of the same result.
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value many =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt, splits,
                            arith::ConstantIndexOp::create(rewriter, loc, 1));
  Value numBatches = tensor::DimOp::create(rewriter, loc, op.getQuery(), 0);
  Value splitBatches =
      arith::SelectOp::create(rewriter, loc, many, numBatches, zero);
  Value unsplitBatches =
      arith::SubIOp::create(rewriter, loc, numBatches, splitBatches);
  auto unsplitOp = cast<AttentionOp>(rewriter.clone(*op));
  FailureOr<Value> tiled = tileToOnlineSoftmax(rewriter, unsplitOp, unsplit);
  if (failed(tiled))
    return failure();
  Value forallResult = *tiled;
  if (auto castOp = forallResult.getDefiningOp<tensor::CastOp>())
    forallResult = castOp.getSource();
  auto forall = forallResult.getDefiningOp<scf::ForallOp>();
  if (!forall)
    return failure();
  // The tiles' first dim is the batch (tiles of one batch each).
  SmallVector<OpFoldResult> upper = forall.getMixedUpperBound();
  upper[0] = unsplitBatches;
  SmallVector<Value> dynamicUpper;
  SmallVector<int64_t> staticUpper;
  dispatchIndexOpFoldResults(upper, dynamicUpper, staticUpper);
  forall.getDynamicUpperBoundMutable().assign(dynamicUpper);
  forall.setStaticUpperBound(staticUpper);
  rewriter.setInsertionPointAfter(forall);
  SmallVector<Value> results(forall.getResults());
  // Batches [0, n) of a result.
  auto firstBatches = [&](Value source, Value n) -> SmallVector<OpFoldResult> {
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, source);
    sizes[0] = n;
    return sizes;
  };
  auto offsetsOf = [&](ArrayRef<OpFoldResult> sizes, int64_t v) {
    return SmallVector<OpFoldResult>(sizes.size(), rewriter.getIndexAttr(v));
  };
  // The split results into the first (all or no) batches of those.
  split.restrictBatches(splitBatches);
  SmallVector<Value> splitDests;
  for (Value result : results) {
    SmallVector<OpFoldResult> sizes = firstBatches(result, splitBatches);
    splitDests.push_back(tensor::ExtractSliceOp::create(
        rewriter, loc, result, offsetsOf(sizes, 0), sizes,
        offsetsOf(sizes, 1)));
  }
  SmallVector<Value> merged = split.build(splits, splitDests);
  for (auto [value, result] : llvm::zip_equal(merged, results)) {
    SmallVector<OpFoldResult> sizes = firstBatches(result, splitBatches);
    result = tensor::InsertSliceOp::create(rewriter, loc, value, result,
                                           offsetsOf(sizes, 0), sizes,
                                           offsetsOf(sizes, 1));
  }
  results = castTo(rewriter, loc, results, op->getResultTypes());
  rewriter.replaceOp(op, results);
  return results.front();
}
