//===- GatedAttentionBackwardToLinalg.h - reference backward ----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_BACKWARD_TO_LINALG_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_BACKWARD_TO_LINALG_H

namespace mlir {
class RewritePatternSet;

namespace gated_attention {

/// Patterns that rewrite `gated_attention.attention_backward` into its
/// reference form: linalg.generic ops on tensors that materialize the
/// Sq x Skv weights and their gradients.
void populateGatedAttentionBackwardToLinalgPatterns(
    RewritePatternSet &patterns);

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_BACKWARD_TO_LINALG_H
