//===- Translatable.h - what translation to LLVM IR can build ---*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Checks shared by verify-lowered (on each GPU module before it is compiled,
// and on the pipelines' output) and verify-translation: what the LLVM
// dialect's verifier accepts but translation to LLVM IR cannot build; the
// module attributes translation reads are checked also on the pipelines'
// input (verify-module-attributes), since lowerings read the data layout.
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
/// intrinsics (`llvm.`), or if a function's personality is not a function
/// (translation resolves it unchecked). `note` may attach notes to the
/// error.
LogicalResult verifyTranslatable(
    Operation *op,
    llvm::function_ref<void(InFlightDiagnostic &)> note = nullptr);

/// Fails, with an error at `op`, if it holds a data layout specification
/// (under any name: ModuleOp takes the first attribute that is one, which
/// the DLTI dialect verifies only as `dlti.dl_spec`), or, as a builtin or
/// GPU module, an `llvm.*` module attribute of a kind translation to LLVM
/// IR casts it to without checking (`llvm.target_triple = 3` crashed it).
LogicalResult verifyModuleAttributes(Operation *op);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_TRANSLATABLE_H
