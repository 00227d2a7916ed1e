//===- Transforms.h - gated_attention rewrites ------------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_TRANSFORMS_H
#define GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_TRANSFORMS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir {
class RewritePatternSet;
class RewriterBase;
class Value;

namespace gated_attention {
class AttentionOp;

/// Block sizes of the online-softmax form.
struct OnlineSoftmaxOptions {
  /// Query rows per tile (used by tileToOnlineSoftmax: the R heads of a GQA
  /// group share a tile of R x max(1, queryBlock / R) rows).
  int64_t queryBlock = 64;
  /// Keys per iteration of the key loop.
  int64_t keyBlock = 64;
};

/// Rewrites one attention op into the online-softmax (FlashAttention-2) key
/// loop with the gate in the epilogue, without tiling it first: batches and
/// head groups become scf.for loops (none when they run once) and all rows
/// of the op form one query tile, padded to a static row count when the
/// rows have a constant upper bound (then the heads of a GQA group are
/// stacked into that tile). Used on the tiles made by `gated-attention-tile`.
FailureOr<Value> decomposeToOnlineSoftmax(RewriterBase &rewriter,
                                          AttentionOp op,
                                          const OnlineSoftmaxOptions &options);

/// Patterns applying `decomposeToOnlineSoftmax` to every attention op.
void populateGatedAttentionOnlineSoftmaxPatterns(
    RewritePatternSet &patterns, const OnlineSoftmaxOptions &options);

/// The unit attribute that marks the scf.forall of an online-softmax form, so
/// that later steps (CPU vectorization) touch only the tiles made here.
inline constexpr StringLiteral kOnlineSoftmaxLoopAttr =
    "gated_attention.online_softmax";

/// Tiles `op` into an scf.forall over (B, Hq, query blocks) through its
/// TilingInterface and decomposes the tile into the online-softmax loop.
/// Returns the value replacing the op's result.
FailureOr<Value> tileToOnlineSoftmax(RewriterBase &rewriter, AttentionOp op,
                                     const OnlineSoftmaxOptions &options);

/// Patterns raising unfused gated attention in linalg on tensors (Q Kᵀ,
/// scale, causal mask, softmax, P V, gate) to gated_attention.attention.
void populateGatedAttentionRaisePatterns(RewritePatternSet &patterns);

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_DIALECT_GATED_ATTENTION_TRANSFORMS_TRANSFORMS_H
