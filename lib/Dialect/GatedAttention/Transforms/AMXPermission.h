//===- AMXPermission.h - the OS permission for AMX tile data ----*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Linux hands a process the AMX tile data state (XTILEDATA, 8 KiB per thread)
// only on request: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) before
// its first tile instruction, which otherwise faults (SIGILL) (the kernel's
// Documentation/arch/x86/xstate.rst). Compiled code requests it itself, from
// a load-time constructor, so that every way of running it (mlir-runner, a
// shared library loaded by Python or C) is covered.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_AMXPERMISSION_H
#define GATED_ATTENTION_LIB_TRANSFORMS_AMXPERMISSION_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::gated_attention {

/// The constructor's symbol; the Python package looks for it in a compiled
/// library to request the permission itself (and raise) before loading it.
constexpr StringLiteral kAMXPermissionSymbol = "__gated_attention_request_amx";

/// Adds to `module` (once) a function requesting the AMX tile data
/// permission, registered in llvm.global_ctors: on refusal (a CPU or kernel
/// without AMX) it writes an error naming AMX to stderr and exits with 1.
void addAMXPermissionRequest(ModuleOp module);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_AMXPERMISSION_H
