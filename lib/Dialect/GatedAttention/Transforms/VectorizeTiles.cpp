//===- VectorizeTiles.cpp - CPU vectorization of the tile math ------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The online-softmax form has static tiles (Bq x D, Bk x D, Bq x Bk, ...).
// This pass tiles their linalg ops to register size and vectorizes them with
// upstream linalg vectorization and vector lowering patterns.
//
//===----------------------------------------------------------------------===//

#include "FilledAccumulators.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "MatrixUnits.h"
#include "PackOperands.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONVECTORIZETILESPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
using utils::IteratorType;

/// A linalg op inside the scf.forall of an online-softmax form.
bool isInOnlineSoftmaxTile(Operation *op) {
  for (auto loop = op->getParentOfType<scf::ForallOp>(); loop;
       loop = loop->getParentOfType<scf::ForallOp>())
    if (isOnlineSoftmaxLoop(loop))
      return true;
  return false;
}

bool isStaticTensorOp(linalg::LinalgOp op) {
  return op.hasPureTensorSemantics() &&
         llvm::all_of(op->getOperandTypes(), [](Type t) {
           auto shaped = dyn_cast<ShapedType>(t);
           return !shaped || shaped.hasStaticShape();
         });
}

/// A (parallel, parallel, reduction) generic: a contraction.
bool isContraction(linalg::LinalgOp op) {
  return isa<linalg::GenericOp>(op) && op.getNumLoops() == 3 &&
         op.getNumDpsInputs() == 2 &&
         op.getIteratorTypesArray() ==
             SmallVector<IteratorType>{IteratorType::parallel,
                                       IteratorType::parallel,
                                       IteratorType::reduction};
}

/// Marks a contraction's reduction loop made by register tiling, for
/// hoisting its accumulators (the attribute is removed after).
constexpr StringLiteral kDepthLoop = "gated_attention.register_depth_loop";
/// A depth loop of a contraction marked by markSumFromZero.
constexpr StringLiteral kSumFromZeroLoop =
    "gated_attention.sum_from_zero_depth_loop";

/// `op` as ops whose loops its register tile `sizes` divides: itself, or
/// split into the part a loop's tile divides and the remainder (tiling
/// alone would leave a tile of dynamic size, which is not vectorized and
/// runs element by element; e.g. 256 rows in tiles of 6, Dv 80 in 32s, a
/// reduction over D 80 in steps of 32). A remainder gets a tile of its own
/// size; a split reduction accumulates the second part onto the first.
SmallVector<linalg::LinalgOp> splitRemainders(RewriterBase &rewriter,
                                              linalg::LinalgOp op,
                                              ArrayRef<int64_t> sizes) {
  SmallVector<linalg::LinalgOp> parts = {op};
  for (unsigned dim = 0; dim < sizes.size(); ++dim) {
    SmallVector<linalg::LinalgOp> split;
    for (linalg::LinalgOp part : parts) {
      int64_t range = part.getStaticLoopRanges()[dim];
      int64_t size = sizes[dim];
      if (!size || ShapedType::isDynamic(range) || range <= size ||
          range % size == 0) {
        split.push_back(part);
        continue;
      }
      rewriter.setInsertionPoint(part);
      auto [whole, rest] =
          linalg::splitOp(rewriter, cast<TilingInterface>(part.getOperation()),
                          dim, rewriter.getIndexAttr(range - range % size));
      split.push_back(cast<linalg::LinalgOp>(whole.getOperation()));
      split.push_back(cast<linalg::LinalgOp>(rest.getOperation()));
    }
    parts = std::move(split);
  }
  return parts;
}

/// A float max reduction of a 1-D vector of 2^k lanes as a halving tree:
/// lanes [0, n/2) against [n/2, n) elementwise, down to one. llc 22 lowers
/// `llvm.vector.reduce.fmaximum` (and fmax) on x86 as a serial chain of
/// scalar steps, each with its NaN check, `reassoc` or not: a row max of
/// 256 keys spent most of its time there. Max is associative, NaNs
/// included, so the tree computes the same value.
struct MaxReductionAsTree : OpRewritePattern<vector::ReductionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ReductionOp op,
                                PatternRewriter &rewriter) const override {
    vector::CombiningKind kind = op.getKind();
    if (kind != vector::CombiningKind::MAXIMUMF &&
        kind != vector::CombiningKind::MAXNUMF)
      return failure();
    VectorType type = op.getSourceVectorType();
    int64_t n = type.getNumElements();
    // (A masked reduction's vector.mask holds one op.)
    if (type.getRank() != 1 || type.isScalable() || n < 2 ||
        !llvm::isPowerOf2_64(n) || isa<vector::MaskOp>(op->getParentOp()))
      return failure();
    Location loc = op.getLoc();
    Value v = op.getVector();
    auto max = [&](Value a, Value b) -> Value {
      if (kind == vector::CombiningKind::MAXIMUMF)
        return arith::MaximumFOp::create(rewriter, loc, a, b, op.getFastmath());
      return arith::MaxNumFOp::create(rewriter, loc, a, b, op.getFastmath());
    };
    for (int64_t half = n / 2; half >= 1; half /= 2) {
      SmallVector<int64_t> low, high;
      for (int64_t i = 0; i < half; ++i) {
        low.push_back(i);
        high.push_back(half + i);
      }
      // (Two statements: the order of a call's arguments is unspecified,
      // and the IR's must not depend on the compiler.)
      Value lowHalf = vector::ShuffleOp::create(rewriter, loc, v, v, low);
      Value highHalf = vector::ShuffleOp::create(rewriter, loc, v, v, high);
      v = max(lowHalf, highHalf);
    }
    Value result = vector::ExtractOp::create(rewriter, loc, v, 0);
    if (Value acc = op.getAcc())
      result = max(result, acc);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GatedAttentionVectorizeTilesPass
    : gated_attention::impl::GatedAttentionVectorizeTilesPassBase<
          GatedAttentionVectorizeTilesPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// Register-size tile sizes for `op` (0 = untiled), or empty to leave it.
  SmallVector<int64_t> tileSizesFor(linalg::LinalgOp op, bool isPack) const {
    unsigned loops = op.getNumLoops();
    if (isPack)
      return loops == 3 ? SmallVector<int64_t>{16, 16, 0}
                        : SmallVector<int64_t>{16, 16};
    if (isContraction(op))
      return {registerRows, registerCols, registerDepth};
    if (isPairContraction(op) && isForAMXTiles(op))
      return amxRegisterTile(op);
    // registerDepth reduction steps are registerDepth / 2 pairs.
    if (isPairContraction(op))
      return {registerRows, registerCols, registerDepth / 2, 0};
    if (loops == 2)
      return {1, 0};
    return {};
  }
};
} // namespace

void GatedAttentionVectorizeTilesPass::runOnOperation() {
  Operation *root = getOperation();
  MLIRContext *ctx = &getContext();
  IRRewriter rewriter(ctx);

  // Only the tiles of the online-softmax form: static linalg ops in the
  // foralls that gated-attention-tile marked.
  SmallVector<linalg::LinalgOp> ops;
  root->walk([&](linalg::LinalgOp op) {
    if (isInOnlineSoftmaxTile(op) && isStaticTensorOp(op))
      ops.push_back(op);
  });

  std::optional<MatrixUnits> units = parseMatrixUnits(matrixUnits);
  if (!units) {
    root->emitError() << "option 'matrix-units': unknown value '" << matrixUnits
                      << "'; expected fma, avx512-bf16 or amx";
    return signalPassFailure();
  }
  // The units of each contraction (loops m, n, k). With amx, one whose
  // tiles would not all be 16 rows x 16 columns x 16 pairs takes
  // AVX512-BF16 instead: AMX tiles of a second shape in one function (a
  // decode step's 8-row tiles beside a prefill's 16 in the torch op's
  // functions) made LLVM's tile register allocation spill every tile to
  // the stack, which halved the speed of all of them.
  // Only bf16 products go to the matrix units: an f32 contraction is FMAs
  // whatever the option (taken for AMX on an AMX host, S = Q Kᵀ in f32 lost
  // its start from zeros in registers and read a zero-filled buffer).
  auto unitsOf = [&](linalg::LinalgOp op) {
    auto right = op.getNumDpsInputs() == 2
                     ? dyn_cast<ShapedType>(op.getDpsInputs()[1].getType())
                     : nullptr;
    if (!right || !right.getElementType().isBF16())
      return MatrixUnits::FMA;
    if (*units != MatrixUnits::AMX)
      return *units;
    SmallVector<int64_t> r = op.getStaticLoopRanges();
    bool whole = r[0] % kAMXRows == 0 && r[1] % kAMXColumns == 0 &&
                 r[2] % (2 * kAMXPairs) == 0;
    return whole ? MatrixUnits::AMX : MatrixUnits::AVX512BF16;
  };
  // bf16 pairs fill whole dot-product registers of 4, 8 or 16 lanes: every
  // register tile of the contraction (the whole ones and the remainder
  // splitRemainders cuts) must be a multiple of 4 columns wide (a value
  // head dim of 2 was not, and failed to vectorize).
  auto pairs = [&](linalg::LinalgOp op) {
    MatrixUnits opUnits = unitsOf(op);
    if (opUnits == MatrixUnits::AMX)
      return true;
    if (opUnits != MatrixUnits::AVX512BF16)
      return false;
    int64_t cols = op.getStaticLoopRanges()[1];
    int64_t whole = std::min(cols, registerCols.getValue());
    int64_t rest = cols > registerCols ? cols % registerCols : 0;
    return whole % 4 == 0 && rest % 4 == 0;
  };

  // 0. Contractions that start from a fill get a fill of their own, before
  // the shared one is tiled (FilledAccumulators); not those on AMX, which
  // start from tilezero (startAMXTilesFromZero).
  int64_t fills = 0;
  for (linalg::LinalgOp op : ops)
    if (isContraction(op) && unitsOf(op) != MatrixUnits::AMX &&
        privatizeInitFill(rewriter, op, fills))
      ++fills;

  // 1. Pack right operands (bf16 pairs on the matrix units, else transposed
  // and widened to f32); 2. tile to register size.
  SmallVector<std::pair<linalg::LinalgOp, bool>> toTile;
  for (linalg::LinalgOp op : ops) {
    if (isContraction(op)) {
      auto generic = cast<linalg::GenericOp>(op);
      bool onAMX = unitsOf(op) == MatrixUnits::AMX;
      FailureOr<PairContraction> paired =
          pairs(op) ? packBF16Pairs(rewriter, generic)
                    : FailureOr<PairContraction>(failure());
      if (succeeded(paired)) {
        // (The op computing P, already listed, was erased: its rounding
        // joined it and is listed below.)
        if (paired->fusedProducer)
          llvm::erase_if(toTile, [&](auto &entry) {
            return entry.first.getOperation() == paired->fusedProducer;
          });
        // The right operand packed by whole rows (its own loop); else tiled
        // and vectorized like the other ops.
        FailureOr<Value> packed = emitPairPack(rewriter, paired->rhsPack);
        if (succeeded(packed))
          rewriter.replaceOp(paired->rhsPack, *packed);
        else
          toTile.push_back({paired->rhsPack, true});
        if (onAMX)
          markForAMXTiles(rewriter, paired->contraction);
        toTile.push_back({paired->contraction, false});
        for (linalg::GenericOp elementwise : paired->elementwise)
          toTile.push_back({elementwise, false});
        continue;
      }
      // The online softmax's `P V` (the contraction summed from zero).
      if (linalg::GenericOp pack =
              packRhs(rewriter, generic, isSumFromZero(generic)))
        toTile.push_back({pack, true});
    }
    toTile.push_back({op, false});
  }
  auto tileOp =
      [&](linalg::LinalgOp op,
          SmallVector<int64_t> sizes) -> FailureOr<scf::SCFTilingResult> {
    // A tile larger than its loop would be cut to a dynamic size, which
    // is not vectorized: the whole loop is one tile (the backward's pair
    // products over 16-row blocks have 8 pairs; a row remainder).
    for (auto [size, range] : llvm::zip(sizes, op.getStaticLoopRanges()))
      if (!ShapedType::isDynamic(range) && size > range)
        size = range;
    scf::SCFTilingOptions tiling;
    tiling.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(op.getOperation()), tiling);
    if (failed(tiled))
      op->emitError("failed to tile to register size");
    else
      rewriter.replaceOp(op, tiled->replacements);
    return tiled;
  };
  // Per private fill (FilledAccumulators): its parts whose tiles do not
  // start from its value (yet).
  llvm::DenseMap<int64_t, int64_t> unstarted;
  for (auto [whole, isPack] : toTile) {
    SmallVector<int64_t> wholeSizes = tileSizesFor(whole, isPack);
    if (wholeSizes.empty() ||
        llvm::all_of(wholeSizes, [](int64_t s) { return !s; }))
      continue;
    bool contraction =
        !isPack && (isContraction(whole) || isPairContraction(whole));
    // AMX multiplies from memory later: its tiles have no depth loop.
    bool depthLoops = contraction && !isForAMXTiles(whole);
    // (Read before tiling: splitting and tiling replace `whole`.)
    bool fromZero = depthLoops && isSumFromZero(whole);
    SmallVector<linalg::LinalgOp> parts =
        contraction ? splitRemainders(rewriter, whole, wholeSizes)
                    : SmallVector<linalg::LinalgOp>{whole};
    for (linalg::LinalgOp op : parts) {
      // The id of the private fill the part starts from, or -1.
      int64_t fill = depthLoops ? startsFromFill(op).value_or(-1) : -1;
      FailureOr<scf::SCFTilingResult> tiled = tileOp(op, wholeSizes);
      if (failed(tiled))
        return signalPassFailure();
      // (rows, cols, reduction) loops.
      if (fill >= 0)
        ++unstarted[fill];
      if (!depthLoops || tiled->loops.size() != 3)
        continue;
      tiled->loops.back()->setAttr(kDepthLoop, rewriter.getUnitAttr());
      if (fromZero)
        tiled->loops.back()->setAttr(kSumFromZeroLoop, rewriter.getUnitAttr());
      if (fill >= 0)
        markFilledTile(rewriter, tiled->loops, fill);
    }
  }

  // 3. Vectorize every static tile op.
  auto vectorizeTile = [&](linalg::LinalgOp op) -> LogicalResult {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::VectorizationResult> result = linalg::vectorize(
        rewriter, op, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
        /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
        /*assumeDynamicDimsMatchVecSizes=*/false,
        /*createNamedContraction=*/isContraction(op));
    if (failed(result))
      return op->emitError("failed to vectorize");
    rewriter.replaceOp(op, result->replacements);
    return success();
  };
  SmallVector<linalg::LinalgOp> tiles;
  root->walk([&](linalg::LinalgOp op) {
    if (isInOnlineSoftmaxTile(op) && isStaticTensorOp(op))
      tiles.push_back(op);
  });
  for (linalg::LinalgOp op : tiles) {
    // Private fills go once no tile reads them (dropPrivateFills).
    if (isPrivateFill(op))
      continue;
    // On AMX the pair contraction is multiplied from memory, after
    // bufferization (gated-attention-amx-tiles).
    if (isPairContraction(op) && isForAMXTiles(op))
      continue;
    if (isPairContraction(op)) {
      FailureOr<Value> vectorized = emitAVX512DotTile(rewriter, op);
      if (failed(vectorized)) {
        op->emitError("failed to vectorize");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, *vectorized);
      continue;
    }
    if (failed(vectorizeTile(op)))
      return signalPassFailure();
  }

  // 4. The vectorizer expresses contractions as multi_reduction(mul(
  // broadcast)); fold them back into vector.contract first.
  RewritePatternSet toContract(ctx);
  vector::populateVectorReductionToContractPatterns(toContract);
  vector::populateVectorTransferPermutationMapLoweringPatterns(toContract);
  for (RegisteredOperationName name : ctx->getRegisteredOperations())
    if (name.getDialectNamespace() == "vector")
      name.getCanonicalizationPatterns(toContract, ctx);
  if (failed(applyPatternsGreedily(root, std::move(toContract))))
    return signalPassFailure();
  if (*units != MatrixUnits::FMA) {
    requireMatrixUnitFeatures(root, *units);
    roundWithAVX512BF16(root);
  }

  // The accumulators stay in registers through a contraction's reduction
  // loop instead of being stored and reloaded every `register-depth` steps
  // (vector iter_args; the read/write pair moves out of the loop).
  SmallVector<scf::ForOp> depthLoops;
  root->walk([&](scf::ForOp loop) {
    if (loop->removeAttr(kDepthLoop))
      depthLoops.push_back(loop);
  });
  for (scf::ForOp loop : depthLoops) {
    int64_t fill = takeFilledMark(loop).value_or(-1);
    bool fromZero = static_cast<bool>(loop->removeAttr(kSumFromZeroLoop));
    auto hoisted = cast<scf::ForOp>(
        hoistLoopInvariantSubsets(rewriter, loop).getOperation());
    // The tiles of `S = Q Kᵀ` start from zeros in registers, not from a
    // copy of a zero-filled buffer.
    if (fill >= 0 && succeeded(startFromFill(rewriter, hoisted)))
      --unstarted[fill];
    // The tiles of acc's chunk (`P V`) sum their keys apart from it.
    if (fromZero && failed(sumFromZero(rewriter, hoisted))) {
      hoisted->emitError("a register tile marked to sum from zero carries "
                         "no accumulator");
      return signalPassFailure();
    }
  }
  // A fill some tile still reads is tiled by rows and vectorized as the
  // other fills are.
  for (linalg::FillOp fill : dropPrivateFills(rewriter, root, unstarted)) {
    FailureOr<scf::SCFTilingResult> tiled = tileOp(fill, {1, 0});
    if (failed(tiled))
      return signalPassFailure();
    for (Operation *op : tiled->tiledOps)
      if (failed(vectorizeTile(cast<linalg::LinalgOp>(op))))
        return signalPassFailure();
  }

  // 5. Lower the vector ops that LLVM would not lower well.
  RewritePatternSet patterns(ctx);
  vector::populateVectorContractLoweringPatterns(
      patterns, vector::VectorContractLowering::OuterProduct);
  vector::populateVectorOuterProductLoweringPatterns(patterns);
  vector::populateVectorTransposeLoweringPatterns(
      patterns, vector::VectorTransposeLowering::Shuffle16x16);
  vector::populateVectorMultiReductionLoweringPatterns(
      patterns, vector::VectorMultiReductionLowering::InnerReduction);
  patterns.add<MaxReductionAsTree>(ctx);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateVectorBroadcastLoweringPatterns(patterns);
  vector::populateVectorShapeCastLoweringPatterns(patterns);
  populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
    return name == math::ExpOp::getOperationName();
  });
  vector::ContractionOp::getCanonicalizationPatterns(patterns, ctx);
  vector::TransferReadOp::getCanonicalizationPatterns(patterns, ctx);
  vector::TransferWriteOp::getCanonicalizationPatterns(patterns, ctx);
  if (failed(applyPatternsGreedily(root, std::move(patterns))))
    return signalPassFailure();
}
