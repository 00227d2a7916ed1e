//===- Translatable.h - what translation to LLVM IR can build ---*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Checks shared by verify-lowered (on each GPU module before it is compiled,
// and on the pipelines' output) and verify-translation: what the LLVM
// dialect's verifier accepts but translation to LLVM IR cannot build.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_TRANSLATABLE_H
#define GATED_ATTENTION_LIB_TRANSFORMS_TRANSLATABLE_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"

namespace mlir::gated_attention {

/// Fails, with an error at `op`, if one of its types (results, the
/// arguments of its blocks, types its attributes hold) is not one LLVM IR
/// has, or if it defines a symbol under a name LLVM reserves for its
/// intrinsics (`llvm.`). `note` may attach notes to the error.
LogicalResult verifyTranslatable(
    Operation *op,
    llvm::function_ref<void(InFlightDiagnostic &)> note = nullptr);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_TRANSLATABLE_H
