//===- GatedAttentionToParallelRows.h - SIMT row kernel ---------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_PARALLEL_ROWS_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_PARALLEL_ROWS_H

#include <cstdint>

namespace mlir {
class RewritePatternSet;

namespace gated_attention {

/// Rewrites gated_attention.attention into nested scf.parallel loops on
/// memrefs, one query row per inner iteration (a GPU thread once mapped),
/// `rowsPerBlock` rows per outer iteration (a GPU block).
void populateGatedAttentionToParallelRowsPatterns(RewritePatternSet &patterns,
                                                  int64_t rowsPerBlock);

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_PARALLEL_ROWS_H
