//===- TileAttention.cpp - the gated-attention-tile pass ------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "OnlineSoftmaxTile.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Threading.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONTILEPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

void mlir::gated_attention::markOnlineSoftmaxLoop(
    scf::ForallOp loop, std::optional<int64_t> growingDim) {
  SmallVector<Attribute> mapping;
  for (int64_t i = 0, e = loop.getRank(); i < e; ++i)
    mapping.push_back(
        TileMappingAttr::get(loop.getContext(), i, growingDim == i));
  loop.setMappingAttr(ArrayAttr::get(loop.getContext(), mapping));
}

static constexpr StringLiteral kSumFromZero = "gated_attention.sum_from_zero";

void mlir::gated_attention::markSumFromZero(Operation *contraction) {
  contraction->setAttr(kSumFromZero, UnitAttr::get(contraction->getContext()));
}

bool mlir::gated_attention::isSumFromZero(Operation *op) {
  return op->hasAttr(kSumFromZero);
}

bool mlir::gated_attention::isOnlineSoftmaxLoop(Operation *op) {
  auto loop = dyn_cast<scf::ForallOp>(op);
  if (!loop || !loop.getMapping())
    return false;
  return llvm::all_of(*loop.getMapping(), llvm::IsaPred<TileMappingAttr>);
}

/// The op's Sq, from its query or its result type (kDynamic if neither
/// knows it).
static int64_t staticQueryRows(AttentionOp op) {
  int64_t numRows = op.getQueryType().getDimSize(2);
  return ShapedType::isDynamic(numRows) ? op.getResultType().getDimSize(2)
                                        : numRows;
}

int64_t
mlir::gated_attention::queryRowsPerHead(AttentionOp op,
                                        const OnlineSoftmaxOptions &options) {
  int64_t group = stackedHeadsPerTile(op.getGroupSize());
  int64_t rowsPerHead = std::max<int64_t>(1, options.queryBlock / group);
  // No more rows per head than the op has (a static decode step: one).
  int64_t numRows = staticQueryRows(op);
  if (!ShapedType::isDynamic(numRows))
    rowsPerHead = std::max<int64_t>(1, std::min(rowsPerHead, numRows));
  return rowsPerHead;
}

// Auto blocks. On one thread of a Zen 4 (bench/cpu_attention_ab.py,
// 2026-12-05) tiles of 256 query rows over blocks of 128 keys ran
// 1.06-1.12x as fast as 64 x 64 in f32 and bf16, on H 8 D 128 and on
// Qwen3-Next's shape: a K/V block is transposed and read once per more
// rows, the accumulator rescaled once per more keys. Larger blocks lose
// where they pad (rows past Sq, keys past Skv are computed and dropped)
// and where fewer tiles leave threads idle.
static constexpr int64_t kMinTilesPerThread = 4;

/// Whether a block computing `padded` elements costs at most 1/8 more than
/// the smallest block, computing `smallest`.
static bool padsLittle(int64_t padded, int64_t smallest) {
  return 8 * padded <= 9 * smallest;
}

static int64_t roundUp(int64_t n, int64_t block) {
  return llvm::divideCeil(n, block) * block;
}

/// The shortest blocks on a causal tile's diagonal (chooseDiagonalBlock).
static constexpr int64_t kMinDiagonalKeyBlock = 32;

/// Blocks of 256 bf16/f16 keys or 128 f32 ones (the same bytes; a static
/// key count that 128-key blocks would pad by more than 1/8 takes 64).
/// 256-key blocks end in half-length ones (halfKeyBlock), so they pad no
/// more than 128-key blocks. On the 2-core AMX Xeon (2026-12-06, Design.md
/// has the figures) 256 bf16 keys ran 1.00-1.09x as fast as 128 in the
/// torch op's functions, decode steps 0.99-1.03x: acc is rescaled half as
/// often. 256 f32 keys ran decode steps 0.82-0.85x (K and V blocks of
/// 512 KiB at D 256, streamed once a step).
static int64_t chooseKeyBlock(int64_t keys, Type element) {
  int64_t longest =
      element.getIntOrFloatBitWidth() <= 16 ? 4 * kSmallBlock : 2 * kSmallBlock;
  if (ShapedType::isDynamic(keys))
    return longest;
  return padsLittle(roundUp(keys, 2 * kSmallBlock), roundUp(keys, kSmallBlock))
             ? longest
             : kSmallBlock;
}

/// With Sq dynamic (the torch op's functions) the tiles are counted for a
/// nominal prefill of this many rows, and a head has at most
/// kMaxDynamicRowsPerHead rows in a tile (at most 127 padded).
static constexpr int64_t kNominalRows = 1024;
static constexpr int64_t kMaxDynamicRowsPerHead = 128;

/// Query rows a head has in tiles of `block` rows of `op` (with Sq dynamic,
/// of kNominalRows).
static int64_t headRowsIn(AttentionOp op, int64_t block) {
  int64_t rows = staticQueryRows(op);
  if (ShapedType::isDynamic(rows))
    rows = kNominalRows;
  int64_t group = stackedHeadsPerTile(op.getGroupSize());
  return std::max<int64_t>(1, std::min(block / group, rows));
}

/// Whether tiles of `block` query rows pad little (see padsLittle; with Sq
/// dynamic, kMaxDynamicRowsPerHead) and leave kMinTilesPerThread a thread.
static bool queryBlockFits(AttentionOp op, int64_t block, int64_t threads) {
  int64_t rows = staticQueryRows(op);
  bool dynamicRows = ShapedType::isDynamic(rows);
  if (dynamicRows)
    rows = kNominalRows;
  int64_t perHead = headRowsIn(op, block);
  // A dynamic batch counts as one: the tiles' lower bound.
  int64_t batch = op.getQueryType().getDimSize(0);
  int64_t tiles = (ShapedType::isDynamic(batch) ? 1 : batch) *
                  (op.getQueryType().getDimSize(1) /
                   stackedHeadsPerTile(op.getGroupSize())) *
                  llvm::divideCeil(rows, perHead);
  bool padsFew = dynamicRows
                     ? perHead <= kMaxDynamicRowsPerHead
                     : padsLittle(roundUp(rows, perHead),
                                  roundUp(rows, headRowsIn(op, kSmallBlock)));
  return padsFew && tiles >= kMinTilesPerThread * threads;
}

static int64_t chooseQueryBlock(AttentionOp op, int64_t threads) {
  for (int64_t block : {4 * kSmallBlock, 2 * kSmallBlock})
    if (queryBlockFits(op, block, threads))
      return block;
  return kSmallBlock;
}

// Long blocks. On the 2-core AMX Xeon (bench/cpu_attention_ab.py,
// 2026-12-06) tiles of 512 query rows over blocks of 256 keys ran
// 1.03-1.06x as fast as 256 x 128 in f32 and 1.08-1.12x in bf16 on AMX
// without a causal mask (H 8 D 128, S 512-4096): K is transposed, and acc
// rescaled and its chunk folded, half as often. A causal tile computes about
// its rows per head R in masked keys on its diagonal, which costs more in
// 512-row tiles unless the keys are long: Qwen3-Next's tiles (R 64) ran
// 0.96x at S 1024, 1.00x at 2048 and 1.04-1.07x at 4096.
static constexpr int64_t kLongQueryBlock = 8 * kSmallBlock;
static constexpr int64_t kLongKeyBlock = 4 * kSmallBlock;
static constexpr int64_t kMinCausalKeysPerRow = 64;

/// Whether `op` takes kLongQueryBlock x kLongKeyBlock: static sizes (a
/// dynamic one pads up to a whole long block), little padding, enough tiles
/// for the threads, and a causal diagonal short against the keys.
static bool takesLongBlocks(AttentionOp op, int64_t threads) {
  int64_t keys = op.getKeyType().getDimSize(2);
  if (ShapedType::isDynamic(staticQueryRows(op)) ||
      ShapedType::isDynamic(keys) ||
      ShapedType::isDynamic(op.getQueryType().getDimSize(0)))
    return false;
  return queryBlockFits(op, kLongQueryBlock, threads) &&
         padsLittle(roundUp(keys, kLongKeyBlock), roundUp(keys, kSmallBlock)) &&
         (!op.getCausal() ||
          keys >= kMinCausalKeysPerRow * headRowsIn(op, kLongQueryBlock));
}

/// A causal tile's diagonal spans about its rows per head R in keys: in
/// blocks of B keys a row computes up to B masked keys past its last, and
/// each block costs its row passes, so the best B grows as sqrt(R). On one
/// Zen 4 thread (bench/cpu_attention_ab.py, 2026-12-05) Qwen3-Next's tiles
/// (R = 32) ran 1.04-1.07x as fast with 32 keys on the diagonal as with its
/// 128-key blocks, and 64 or 16 less; H 8 D 128 (R = 256) ran 0.96-0.99x
/// with 32 or 64. Hence R / 2, a power of two from 32, dividing the key
/// block.
static int64_t chooseDiagonalBlock(AttentionOp op,
                                   const OnlineSoftmaxOptions &options) {
  int64_t rows = queryRowsPerHead(op, options), keys = options.keyBlock;
  if (keys % kMinDiagonalKeyBlock)
    return keys;
  int64_t block = kMinDiagonalKeyBlock;
  while (2 * block <= rows / 2 && keys % (2 * block) == 0)
    block *= 2;
  return block;
}

OnlineSoftmaxOptions
mlir::gated_attention::chooseBlocks(Operation *op,
                                    OnlineSoftmaxOptions options) {
  auto dense = dyn_cast<AttentionOp>(op);
  if (dense && options.keyBlock == kAutoBlock &&
      options.queryBlock == kAutoBlock &&
      takesLongBlocks(dense, std::max<int64_t>(1, options.threads))) {
    options.keyBlock = kLongKeyBlock;
    options.queryBlock = kLongQueryBlock;
  }
  if (options.keyBlock == kAutoBlock)
    options.keyBlock = dense
                           ? chooseKeyBlock(dense.getKeyType().getDimSize(2),
                                            dense.getKeyType().getElementType())
                           : kSmallBlock;
  if (options.queryBlock == kAutoBlock)
    options.queryBlock =
        dense ? chooseQueryBlock(dense, std::max<int64_t>(1, options.threads))
              : kSmallBlock;
  if (options.diagonalKeyBlock == kAutoBlock)
    options.diagonalKeyBlock = dense && dense.getCausal()
                                   ? chooseDiagonalBlock(dense, options)
                                   : options.keyBlock;
  return options;
}

FailureOr<Value> mlir::gated_attention::tileToOnlineSoftmax(
    RewriterBase &rewriter, AttentionOp op,
    const OnlineSoftmaxOptions &autoOptions) {
  OnlineSoftmaxOptions options = chooseBlocks(op, autoOptions);
  if (options.kvSplits != 1)
    return tileWithKeySplits(rewriter, op, options);
  // (B, Hq, Sq) in tiles of (1, R, Bq / R), one scf.forall iteration each:
  // R query heads of a GQA group share one tile of about Bq rows, so every
  // key/value block is loaded once per R heads.
  int64_t group = stackedHeadsPerTile(op.getGroupSize());
  int64_t rowsPerHead = queryRowsPerHead(op, options);
  int64_t numRows = staticQueryRows(op);
  bool causal = op.getCausal();
  // (With Sq dynamic, a decode step's tile takes a one-row-per-head
  // version inside the tile (OnlineSoftmaxOptions::decodeVariant): a second
  // tiling for Sq = 1 under an scf.if would cost the destination-passing
  // result of the torch op, whose functions are dynamic in Sq: each
  // branch's tiling would make its own result buffer.)
  scf::SCFTilingOptions tiling;
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  tiling.setTileSizes({rewriter.getIndexAttr(1), rewriter.getIndexAttr(group),
                       rewriter.getIndexAttr(rowsPerHead)});
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), tiling);
  if (failed(tiled))
    return failure();
  // The tiled results (the output, and the log-sum-exp if asked) are as
  // static as the iteration domain (the query's shape); the op's result
  // types may know more.
  rewriter.setInsertionPointAfter(tiled->loops.front());
  SmallVector<Value, 2> results;
  for (auto [value, type] :
       llvm::zip_equal(tiled->replacements, op->getResultTypes()))
    results.push_back(
        value.getType() == type
            ? value
            : tensor::CastOp::create(rewriter, op.getLoc(), type, value)
                  .getResult());
  Value result = results.front();
  rewriter.replaceOp(op, results);
  // Under the causal mask later query blocks see more keys (`causal` read
  // before `op` was replaced).
  markOnlineSoftmaxLoop(cast<scf::ForallOp>(tiled->loops.front()),
                        causal ? std::optional<int64_t>(2) : std::nullopt);
  auto tile = cast<AttentionOp>(tiled->tiledOps.back());
  // With Sq dynamic, each tile also gets the decode step's one-row version.
  OnlineSoftmaxOptions tileOptions = options;
  tileOptions.decodeVariant = ShapedType::isDynamic(numRows);
  if (failed(decomposeToOnlineSoftmax(rewriter, tile, tileOptions)))
    return failure();
  return result;
}

namespace {
struct GatedAttentionTilePass
    : gated_attention::impl::GatedAttentionTilePassBase<
          GatedAttentionTilePass> {
  using Base::Base;

  void runOnOperation() override {
    if (queryBlock < 0 || keyBlock < 0 || diagonalKeyBlock < 0) {
      getOperation()->emitError("query-block, key-block and "
                                "diagonal-key-block must be positive, or 0 "
                                "(auto)");
      return signalPassFailure();
    }
    FailureOr<int64_t> splits = parseKeySplits(kvSplits);
    if (failed(splits)) {
      getOperation()->emitError()
          << "kv-splits must be 'auto' or a count in [1, " << kMaxKeySplits
          << "], got '" << kvSplits << "'";
      return signalPassFailure();
    }
    if (threads < 0) {
      getOperation()->emitError()
          << "threads must be 0 (this host's) or positive, got "
          << static_cast<int64_t>(threads);
      return signalPassFailure();
    }
    OnlineSoftmaxOptions options{queryBlock, keyBlock, diagonalKeyBlock};
    options.kvSplits = *splits;
    options.threads =
        threads ? threads
                : static_cast<int64_t>(
                      llvm::hardware_concurrency().compute_thread_count());
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<AttentionOp, PagedAttentionOp>(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : ops) {
      // The online softmax is f32 by construction (its overflow scale reads
      // f32 exponent bits, its register tiles hold f32 lanes).
      auto dense = dyn_cast<AttentionOp>(op);
      if (dense &&
          needsWideAccumulator(dense.getQueryType().getElementType())) {
        op->emitError("the tiled online softmax accumulates in f32 and does "
                      "not take f64 ops: lower them with "
                      "convert-gated-attention-to-linalg first "
                      "(--gated-attention-to-llvm does)");
        return signalPassFailure();
      }
      // (The paged op's tiles have one block size.)
      OnlineSoftmaxOptions chosen = chooseBlocks(op, options);
      if (dense && chosen.keyBlock % chosen.diagonalKeyBlock) {
        op->emitError() << "diagonal-key-block (" << chosen.diagonalKeyBlock
                        << ") must divide key-block (" << chosen.keyBlock
                        << ")";
        return signalPassFailure();
      }
      FailureOr<Value> tiled =
          isa<AttentionOp>(op)
              ? tileToOnlineSoftmax(rewriter, cast<AttentionOp>(op), options)
              : tilePagedToOnlineSoftmax(rewriter, cast<PagedAttentionOp>(op),
                                         options);
      if (failed(tiled)) {
        op->emitError("failed to tile into the online-softmax form");
        return signalPassFailure();
      }
    }
  }
};
} // namespace
