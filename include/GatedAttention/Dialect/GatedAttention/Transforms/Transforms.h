//===- Transforms.h - gated_attention rewrites ------------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_TRANSFORMS_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_TRANSFORMS_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace mlir::scf {
class ForallOp;
} // namespace mlir::scf

namespace mlir {
namespace gated_attention {
class AttentionOp;
class PagedAttentionOp;

/// A block size of kAutoBlock is chosen per op (chooseBlocks): a multiple
/// of kSmallBlock, which is also what the backward and the paged op take.
inline constexpr int64_t kAutoBlock = 0;
inline constexpr int64_t kSmallBlock = 64;

/// Block sizes of the online-softmax form.
struct OnlineSoftmaxOptions {
  /// Query rows per tile (used by tileToOnlineSoftmax: the R heads of a GQA
  /// group share a tile of R x max(1, queryBlock / R) rows).
  int64_t queryBlock = 64;
  /// Keys per iteration of the key loop.
  int64_t keyBlock = 64;
  /// Keys per iteration on a causal tile's diagonal (the blocks some rows
  /// see in part, and whole ones between the last full key block and
  /// them): a divisor of keyBlock, or kAutoBlock (chooseBlocks).
  int64_t diagonalKeyBlock = kAutoBlock;
  /// Whether a tile of a dynamic but bounded row count also gets a version
  /// of one row per head, taken when it has one row (a decode step of an op
  /// compiled for any Sq). tileToOnlineSoftmax sets it for ops of dynamic
  /// Sq.
  bool decodeVariant = false;
  /// Split-KV (tileToOnlineSoftmax): 1 (off), N (the keys of every tile in
  /// N parts computed in parallel, then merged), or kAutoKeySplits.
  int64_t kvSplits = 1;
  /// The threads that run the tiles, which kAutoKeySplits reads.
  int64_t threads = 1;
};

/// kv-splits=auto: split the keys only when the tiles are fewer than the
/// threads, into min(ceildiv(threads, tiles), Skv / kMinKeysPerSplit,
/// kMaxKeySplits) parts (decided at run time when the sizes are dynamic).
inline constexpr int64_t kAutoKeySplits = 0;
inline constexpr int64_t kMinKeysPerSplit = 256;
inline constexpr int64_t kMaxKeySplits = 64;

/// The kv-splits option's value: "auto" (kAutoKeySplits) or a count in
/// [1, kMaxKeySplits]; failure otherwise.
FailureOr<int64_t> parseKeySplits(StringRef value);

/// Rewrites one attention op into the online-softmax (FlashAttention-2) key
/// loop with the gate in the epilogue, without tiling it first: batches and
/// head groups become scf.for loops (none when they run once) and all rows
/// of the op form one query tile, padded to a static row count when the
/// rows have a constant upper bound (then the heads of a GQA group are
/// stacked into that tile). Used on the tiles made by `gated-attention-tile`.
/// The loop state starts from `bufferization.alloc_tensor`s (one buffer
/// each, where CSE would merge equal fills of `tensor.empty`), so the
/// bufferization dialect must be loaded.
FailureOr<Value> decomposeToOnlineSoftmax(RewriterBase &rewriter,
                                          AttentionOp op,
                                          const OnlineSoftmaxOptions &options);

/// Patterns applying `decomposeToOnlineSoftmax` to every attention op.
void populateGatedAttentionOnlineSoftmaxPatterns(
    RewritePatternSet &patterns, const OnlineSoftmaxOptions &options);

/// Marks `loop` as the tile grid of an online-softmax form (its mapping:
/// #gated_attention.tile<i> per loop), so that later steps (CPU
/// vectorization) touch only the tiles made here. A mapping survives the
/// canonicalizations that drop discardable attributes (TileMappingAttr).
/// `growingDim`, where given, is the loop along which the tiles' work
/// grows (causal query blocks).
void markOnlineSoftmaxLoop(scf::ForallOp loop,
                           std::optional<int64_t> growingDim = std::nullopt);
/// Whether `op` is an scf.forall that markOnlineSoftmaxLoop marked.
bool isOnlineSoftmaxLoop(Operation *op);

/// Marks a contraction of the online-softmax form (`P V_blk` onto acc's
/// chunk) to be summed from zero in each register tile, its init added
/// once at the end (gated-attention-vectorize-tiles): the chunk then
/// takes one rounding a key block, not one a key, so that a chunk of
/// equal terms does not accumulate its roundings one way.
void markSumFromZero(Operation *contraction);
/// Whether markSumFromZero marked `op`.
bool isSumFromZero(Operation *op);

/// `options` with every kAutoBlock size chosen for `op`: key blocks of 128
/// and tiles of 256 query rows, smaller where those would pad more than
/// 1/8 of the work of 64-row (64-key) blocks or leave fewer than 4 tiles a
/// thread (options.threads); 512 x 256 where both are auto, the sizes
/// static, those rules hold for them too and a causal op has at least 64
/// keys for each of a tile's rows per head. A dynamic Skv takes 128 keys; a
/// dynamic Sq counts its tiles for 1024 rows and takes at most 128 rows per
/// head. The paged op keeps 64 x 64.
OnlineSoftmaxOptions chooseBlocks(Operation *op, OnlineSoftmaxOptions options);

/// Tiles `op` into an scf.forall over (B, Hq, query blocks) through its
/// TilingInterface and decomposes the tile into the online-softmax loop.
/// With options.kvSplits != 1, the forall also runs over parts of each
/// tile's keys, writing unnormalized partials that a merge combines (see
/// SplitKeys.cpp); under kAutoKeySplits an scf.if picks split or not at
/// run time unless the sizes decide it. Returns the value replacing the
/// op's result.
FailureOr<Value> tileToOnlineSoftmax(RewriterBase &rewriter, AttentionOp op,
                                     const OnlineSoftmaxOptions &options);

/// Rewrites `op` into an scf.forall over (query tile, head group) of the
/// packed batch, each tile the online-softmax loop over its sequence's keys
/// read in place from the pages (see PagedOnlineSoftmax.cpp). Returns the
/// value replacing the op's result.
FailureOr<Value> tilePagedToOnlineSoftmax(RewriterBase &rewriter,
                                          PagedAttentionOp op,
                                          const OnlineSoftmaxOptions &options);

/// Patterns lowering gated_attention.paged_attention to a loop over the
/// sequences with one dense gated_attention.attention each (see the
/// gated-attention-unpage pass).
void populateGatedAttentionUnpagePatterns(RewritePatternSet &patterns);

/// Patterns raising unfused gated attention in linalg on tensors (Q Kᵀ,
/// scale, causal mask, softmax, P V, gate) to gated_attention.attention:
/// the attention becomes the op without a gate, then a combine with a
/// built-in activation is folded in (populateGateFoldingPatterns).
void populateGatedAttentionRaisePatterns(RewritePatternSet &patterns);

/// Patterns rewriting frontend spellings of attention (heads folded into
/// the batch around contractions, keepdim unit dims, masks built from
/// iotas, unused results) towards the form the raising patterns match; see
/// the gated-attention-normalize pass.
void populateRaiseNormalizationPatterns(RewritePatternSet &patterns);

/// The greedy driver's configuration for them on `root`: a rewrite budget
/// proportional to its size, so that no input makes them run forever.
GreedyRewriteConfig normalizationConfig(Operation *root);

/// Recognizes a gate activation in a linalg body: given the value `act` that
/// is combined with the attention output and the body's gate argument `x`,
/// returns the gate attribute (implementing GateFunctionAttrInterface) with
/// `act = activation(x)`, or null.
using GateActivationMatcher = std::function<Attribute(Value act, Value x)>;

/// Patterns folding an elementwise `Y * act(G)` or `Y + act(G)`, where Y is
/// the result of a gated_attention.attention without a gate (as is, or
/// reshaped to [B·H, S, D]) used only there, into that op with gate G and the
/// attribute `matcher` returns. `act` may be in the combine's body or in an
/// elementwise producer of G. Gate variants add theirs this way (see
/// docs/ExtendingGates.md).
void populateGateFoldingPatterns(RewritePatternSet &patterns,
                                 GateActivationMatcher matcher,
                                 PatternBenefit benefit = 1);

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_TRANSFORMS_H
