//===- Translatable.cpp - what translation to LLVM IR can build -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "Translatable.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

/// The innermost part of `type` that LLVM IR does not have (`type` is not
/// LLVM-compatible): the element of an array or vector, a struct's field, a
/// signature's argument. Identified structs may refer to themselves, hence
/// `seen`.
static Type incompatiblePart(Type type, llvm::SmallPtrSetImpl<Type> &seen) {
  if (!seen.insert(type).second)
    return type;
  SmallVector<Type> parts;
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type))
    parts.push_back(array.getElementType());
  else if (auto vector = dyn_cast<VectorType>(type))
    parts.push_back(vector.getElementType());
  else if (auto structType = dyn_cast<LLVM::LLVMStructType>(type))
    llvm::append_range(parts, structType.getBody());
  else if (auto function = dyn_cast<LLVM::LLVMFunctionType>(type)) {
    parts.push_back(function.getReturnType());
    llvm::append_range(parts, function.getParams());
  }
  for (Type part : parts)
    if (!LLVM::isCompatibleType(part) && !seen.contains(part))
      return incompatiblePart(part, seen);
  return type;
}

/// Whether translation defines `op`'s symbol in LLVM IR (a declaration
/// only names it).
static bool definesSymbol(Operation *op) {
  if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op))
    return !func.isExternal();
  return isa<gpu::BinaryOp, LLVM::AliasOp, LLVM::IFuncOp>(op);
}

LogicalResult mlir::gated_attention::verifyTranslatable(
    Operation *op, llvm::function_ref<void(InFlightDiagnostic &)> note) {
  // LLVM IR has no definitions under these names: a gpu.binary named
  // @llvm.x became functions @llvm.x_load/_unload that LLVM's verifier
  // rejects after translation, without naming the op.
  auto symbol = dyn_cast<SymbolOpInterface>(op);
  if (symbol && op->getParentOp() &&
      op->getParentOp()->hasTrait<OpTrait::SymbolTable>() &&
      symbol.getName().starts_with("llvm.") && definesSymbol(op)) {
    InFlightDiagnostic diag = op->emitError()
                              << "'" << op->getName() << "' defines @"
                              << symbol.getName()
                              << ", a name LLVM reserves for its intrinsics "
                                 "(which cannot be defined); rename it";
    if (note)
      note(diag);
    return diag;
  }

  // Types that the verifier of an aggregate does not look into: a struct,
  // array or vector of tf32 or f8E5M2 verifies, and translation crashed on
  // it (a null LLVM type).
  auto check = [&](Type type, StringRef where) -> LogicalResult {
    if (LLVM::isCompatibleType(type))
      return success();
    llvm::SmallPtrSet<Type, 4> seen;
    Type part = incompatiblePart(type, seen);
    InFlightDiagnostic diag = op->emitError()
                              << "'" << op->getName() << "' uses " << type
                              << " (" << where << ")";
    if (part != type)
      diag << ", which holds " << part;
    diag << ": LLVM IR has no such type, so translation to LLVM IR cannot "
            "build it";
    if (note)
      note(diag);
    return diag;
  };
  for (Type type : op->getResultTypes())
    if (failed(check(type, "a result")))
      return failure();
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument arg : block.getArguments())
        if (failed(check(arg.getType(), "a block argument")))
          return failure();
  for (NamedAttribute attr : op->getAttrs())
    if (auto type = dyn_cast<TypeAttr>(attr.getValue()))
      if (failed(check(type.getValue(),
                       ("its '" + attr.getName().getValue() + "'").str())))
        return failure();
  return success();
}
