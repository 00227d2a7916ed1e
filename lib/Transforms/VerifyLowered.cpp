//===- VerifyLowered.cpp - what a pipeline leaves behind ------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Transforms/Passes.h"
#include "Translatable.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_VERIFYLOWEREDPASS
#include "GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;

/// The libdevice functions that `ptx` declares but does not define.
static SmallVector<StringRef> unresolvedLibdevice(StringRef ptx) {
  SmallVector<StringRef> names;
  StringRef marker = ".extern .func";
  for (size_t at = ptx.find(marker); at != StringRef::npos;
       at = ptx.find(marker, at + marker.size())) {
    StringRef rest = ptx.drop_front(at + marker.size());
    size_t begin = rest.find("__nv_");
    size_t lineEnd = rest.find('\n');
    if (begin == StringRef::npos || begin > lineEnd)
      continue;
    StringRef name = rest.drop_front(begin);
    names.push_back(name.take_until(
        [](char c) { return !(llvm::isAlnum(c) || c == '_'); }));
  }
  return names;
}

/// How many modules between `top` and `op` hold `op`.
static int nestingDepth(Operation *op, Operation *top) {
  int depth = 0;
  for (Operation *parent = op->getParentOp(); parent && parent != top;
       parent = parent->getParentOp())
    depth += isa<ModuleOp>(parent);
  return depth;
}

/// Whether `op` may stand directly in a module's body for its translation to
/// LLVM IR: symbols (functions, globals, aliases, comdats, modules) and
/// LLVM's module-level ops. Translation converts any other op there with a
/// builder that has no block: `nvvm.barrier0` in a gpu.module's body crashed
/// gpu-module-to-binary.
static bool standsAtModuleLevel(Operation *op) {
  return isa<SymbolOpInterface, LLVM::ModuleFlagsOp, LLVM::LinkerOptionsOp,
             LLVM::GlobalCtorsOp, LLVM::GlobalDtorsOp>(op) ||
         op->hasTrait<OpTrait::IsTerminator>();
}

/// The most bytes of constant data one attribute may hold. Translation to
/// LLVM IR writes out every element, a splat's too (a 2^48-element splat
/// asked for 8 TiB and aborted; one of 256 MiB takes 1.4 GiB under ASan),
/// and the object file carries them: data this large belongs in a buffer
/// passed at run time.
static constexpr uint64_t kMaxConstantBytes = uint64_t(1) << 28;

/// The bytes translation materializes for a constant of `type`, saturated
/// at UINT64_MAX: arrays, vectors and tensors (static, as an attribute's is)
/// of their elements, structs of their fields; any other type (index,
/// pointers) counts as 8. An array's element is built even when the array
/// is empty, so each level counts on its own: a splat of
/// tensor<0x2^40xbf16> asked for 8 TiB.
static uint64_t storageBytes(Type type) {
  auto nest = [](ArrayRef<uint64_t> sizes, uint64_t element) {
    uint64_t bytes = element, largest = element;
    for (uint64_t size : llvm::reverse(sizes)) {
      bool overflow;
      bytes = llvm::SaturatingMultiply(size, bytes, &overflow);
      largest = std::max(largest, bytes);
    }
    return largest;
  };
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type))
    return nest({array.getNumElements()}, storageBytes(array.getElementType()));
  if (auto shaped = dyn_cast<ShapedType>(type);
      shaped && shaped.hasStaticShape() &&
      isa<VectorType, RankedTensorType>(shaped)) {
    SmallVector<uint64_t> sizes(shaped.getShape().begin(),
                                shaped.getShape().end());
    return nest(sizes, storageBytes(shaped.getElementType()));
  }
  if (auto complex = dyn_cast<ComplexType>(type))
    return nest({2}, storageBytes(complex.getElementType()));
  if (auto structType = dyn_cast<LLVM::LLVMStructType>(type)) {
    uint64_t bytes = 0;
    for (Type field : structType.getBody()) {
      bool overflow;
      bytes = llvm::SaturatingAdd(bytes, storageBytes(field), &overflow);
    }
    return bytes;
  }
  if (type.isIntOrFloat())
    return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
  return 8;
}

namespace {
struct VerifyLoweredPass
    : gated_attention::impl::VerifyLoweredPassBase<VerifyLoweredPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::string> names(dialects.begin(), dialects.end());
    if (names.empty())
      names = {"builtin", "llvm"};
    llvm::sort(names);
    // Entries with a dot are ops (`gpu.binary`), the others dialects.
    llvm::StringSet<> allowed;
    for (const std::string &name : names)
      allowed.insert(name);
    auto isAllowed = [&](Operation *op) {
      return allowed.contains(op->getName().getDialectNamespace()) ||
             allowed.contains(op->getName().getStringRef());
    };

    Operation *top = getOperation();
    WalkResult result = top->walk([&](Operation *op) {
      // Casts are checked below, after the op they stand for.
      if (op == top || isa<UnrealizedConversionCastOp>(op))
        return WalkResult::advance();
      int depth = nestingDepth(op, top);
      if (nestedOnly && depth == 0)
        return WalkResult::advance();
      if (!isAllowed(op)) {
        // The terminator of an op that is left too (the gpu.terminator of a
        // gpu.launch) is not the news: its parent, visited next, is.
        Operation *parent = op->getParentOp();
        if (op->hasTrait<OpTrait::IsTerminator>() && parent != top &&
            !isAllowed(parent))
          return WalkResult::advance();
        if (depth > 0) {
          reportNested(op);
          return WalkResult::interrupt();
        }
        InFlightDiagnostic diag =
            op->emitError() << "'" << op->getName()
                            << "' was not lowered by the pipeline (it produces "
                               "only "
                            << llvm::interleaved(names, ", ") << ")";
        noteKernels(diag);
        return WalkResult::interrupt();
      }
      Operation *parent = op->getParentOp();
      if (parent->hasTrait<OpTrait::SymbolTable>() &&
          !standsAtModuleLevel(op)) {
        InFlightDiagnostic diag =
            op->emitError()
            << "'" << op->getName() << "' stands in the body of '"
            << parent->getName()
            << "', where LLVM IR has no place for it (only functions, "
               "globals and module-level declarations); move it into a "
               "function";
        noteKernels(diag);
        return WalkResult::interrupt();
      }
      if (nestedOnly)
        return WalkResult::advance();
      if (failed(verifyConstantSizes(op)))
        return WalkResult::interrupt();
      if (failed(gated_attention::verifyTranslatable(
              op, [&](InFlightDiagnostic &diag) { noteKernels(diag); })))
        return WalkResult::interrupt();
      auto binary = dyn_cast<gpu::BinaryOp>(op);
      if (!binary)
        return WalkResult::advance();
      for (Attribute attr : binary.getObjects()) {
        auto object = dyn_cast<gpu::ObjectAttr>(attr);
        if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
          continue;
        SmallVector<StringRef> missing =
            unresolvedLibdevice(object.getObject().getValue());
        if (missing.empty())
          continue;
        op->emitError() << "kernel PTX calls libdevice ("
                        << llvm::interleaved(missing, ", ")
                        << ") but libdevice was not linked: set CUDA_HOME to "
                           "a CUDA toolkit that has "
                           "nvvm/libdevice/libdevice.10.bc";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    // A cast that a conversion leaves means it did not finish, whatever the
    // dialect list says. Checked last: the op that was not converted, if
    // one is left, is the better diagnostic.
    result = top->walk([&](UnrealizedConversionCastOp cast) {
      if (nestedOnly && nestingDepth(cast, top) == 0)
        return WalkResult::advance();
      InFlightDiagnostic diag =
          cast.emitError() << "'" << cast->getName()
                           << "' was left by the pipeline: a conversion did "
                              "not finish (from "
                           << cast.getOperandTypes() << " to "
                           << cast.getResultTypes() << ")";
      // The usual cause: upstream lowerings that do not all follow a
      // narrower index.
      unsigned indexBits = DataLayout::closest(cast).getTypeSizeInBits(
          IndexType::get(&getContext()));
      if (indexBits != 64)
        diag.attachNote(top->getLoc())
            << "the data layout makes 'index' " << indexBits
            << " bits wide; the pipelines support 64-bit index only";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  /// Fails at `op` if it holds a constant (an elements attribute) of more
  /// than kMaxConstantBytes. Translation writes out as many elements as the
  /// op's type holds, whatever the attribute's shape (a 64-element splat
  /// initializes an array of 2^32), so the op's result and type attributes
  /// count too.
  LogicalResult verifyConstantSizes(Operation *op) {
    Type largest;
    uint64_t bytes = 0;
    auto consider = [&](Type type) {
      uint64_t size = storageBytes(type);
      if (!largest || size > bytes)
        largest = type, bytes = size;
    };
    // One dictionary (an op with properties builds it); the attribute's own
    // type first: named when the others are no larger.
    ArrayRef<NamedAttribute> attrs = op->getAttrs();
    for (NamedAttribute attr : attrs)
      if (auto elements = dyn_cast<ElementsAttr>(attr.getValue()))
        consider(elements.getShapedType());
    if (!largest)
      return success();
    for (NamedAttribute attr : attrs)
      if (auto type = dyn_cast<TypeAttr>(attr.getValue()))
        consider(type.getValue());
    for (Type type : op->getResultTypes())
      consider(type);
    if (bytes <= kMaxConstantBytes)
      return success();
    InFlightDiagnostic diag = op->emitError()
                              << "'" << op->getName() << "' holds a constant ("
                              << largest << ") that LLVM IR spells out in ";
    if (bytes == std::numeric_limits<uint64_t>::max())
      diag << "2^64 bytes or more";
    else
      diag << bytes << " bytes";
    diag << ", more than the 2^28 (256 MiB) the pipelines put in one "
            "constant; pass data this large at run time";
    noteKernels(diag);
    return failure();
  }

  /// Checked in a GPU module: before its kernels are compiled to PTX, which
  /// would fail on the op without naming it.
  void noteKernels(InFlightDiagnostic &diag) {
    if (auto kernels = dyn_cast<gpu::GPUModuleOp>(getOperation()))
      diag.attachNote(kernels.getLoc())
          << "in the kernels of GPU module @" << kernels.getName()
          << ", before they are compiled";
  }

  /// The pipelines nest their function passes on the top-level module's
  /// functions only, as mlir-opt's pipelines do: what a nested module holds
  /// would be lowered in part by the module-level passes, or not at all.
  void reportNested(Operation *op) {
    InFlightDiagnostic diag = op->emitError();
    diag << "'" << op->getName()
         << "' is in a nested module, which the pipeline does not enter (it "
            "lowers the top-level module's functions)";
    if (pipeline.empty())
      return;
    // From the outermost module, which --pass-pipeline anchors on.
    std::string nested = pipeline;
    for (auto module = op->getParentOfType<ModuleOp>(); module;
         module = module->getParentOfType<ModuleOp>())
      nested = "builtin.module(" + nested + ")";
    diag.attachNote(op->getParentOfType<ModuleOp>().getLoc())
        << "to lower this module, nest the pipeline: --pass-pipeline='"
        << nested << "'";
  }
};
} // namespace
