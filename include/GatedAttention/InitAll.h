//===- InitAll.h - register everything of gated-attention -------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_INITALL_H
#define GATED_ATTENTION_INITALL_H

namespace mlir {
class DialectRegistry;

namespace gated_attention {

/// Adds the dialects of this project to `registry`.
void registerAllDialects(DialectRegistry &registry);

/// Registers the passes of this project with the global pass registry.
void registerAllPasses();

/// Registers the pass pipelines of this project.
void registerAllPipelines();

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_INITALL_H
