//===- MemRefCopyToLinalg.h - memref.copy as linalg.copy --------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_MEMREF_COPY_TO_LINALG_H
#define GATED_ATTENTION_CONVERSION_MEMREF_COPY_TO_LINALG_H

namespace mlir {
class RewritePatternSet;

namespace gated_attention {

/// Rewrites memref.copy into linalg.copy (same operands).
void populateMemRefCopyToLinalgPatterns(RewritePatternSet &patterns);

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_CONVERSION_MEMREF_COPY_TO_LINALG_H
