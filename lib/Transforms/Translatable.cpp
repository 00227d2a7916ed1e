//===- Translatable.cpp - what translation to LLVM IR can build -----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "Translatable.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

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

LogicalResult mlir::gated_attention::verifyModuleAttributes(Operation *op) {
  for (NamedAttribute attr : op->getAttrs()) {
    if (!isa<DataLayoutSpecInterface, TargetSystemSpecInterface>(
            attr.getValue()))
      continue;
    // MLIR's verifier accepts layouts that translation aborts on (an ABI
    // alignment of 0 bits, a stack alignment of 3) or, under another name
    // than dlti.dl_spec, entries it crashes on (f16 = 32 : i64).
    return op->emitError()
           << "'" << op->getName() << "' carries a data layout specification ('"
           << attr.getName().getValue()
           << "'), which the pipelines do not take: they lower for their "
              "target (64-bit index; the host's or NVPTX's layout), and "
              "translation to LLVM IR aborts on layouts MLIR's verifier "
              "accepts. Remove it ('llvm.data_layout', a string LLVM checks, "
              "sets the layout of the LLVM IR module)";
  }
  if (!isa<ModuleOp, gpu::GPUModuleOp>(op))
    return success();
  // What translation reads from a module with a cast (a crash on another
  // kind); llvm.data_layout and llvm.module_asm the LLVM dialect verifies.
  auto isString = [](Attribute a) { return isa<StringAttr>(a); };
  auto isStringArray = [&](Attribute a) {
    auto array = dyn_cast<ArrayAttr>(a);
    return array && llvm::all_of(array, isString);
  };
  struct Expected {
    StringRef name;
    function_ref<bool(Attribute)> holds;
    StringRef kind;
  } expected[] = {
      {LLVM::LLVMDialect::getTargetTripleAttrName(), isString, "a string"},
      {LLVM::LLVMDialect::getIdentAttrName(), isString, "a string"},
      {LLVM::LLVMDialect::getCommandlineAttrName(), isString, "a string"},
      {"llvm.dependent_libraries", isStringArray, "an array of strings"},
  };
  for (const Expected &e : expected) {
    Attribute value = op->getDiscardableAttr(e.name);
    if (value && !e.holds(value))
      return op->emitError() << "'" << e.name << "' must be " << e.kind
                             << " (translation to LLVM IR reads it as one), "
                                "not "
                             << value;
  }
  return success();
}

LogicalResult mlir::gated_attention::verifyTranslatable(
    Operation *op, llvm::function_ref<void(InFlightDiagnostic &)> note) {
  if (failed(verifyModuleAttributes(op)))
    return failure();
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

  // Translation looks up a function's personality and uses it unchecked
  // (the LLVM dialect's verifier checks it only when found): one naming no
  // function crashed it.
  if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op)) {
    FlatSymbolRefAttr personality = func.getPersonalityAttr();
    if (personality && !SymbolTable::lookupNearestSymbolFrom<LLVM::LLVMFuncOp>(
                           op, personality.getAttr())) {
      InFlightDiagnostic diag =
          op->emitError() << "'" << op->getName() << "' names " << personality
                          << " as its personality, which is not an "
                             "'llvm.func' here: translation to LLVM IR "
                             "cannot resolve it";
      if (note)
        note(diag);
      return diag;
    }
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
