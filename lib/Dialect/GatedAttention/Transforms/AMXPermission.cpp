//===- AMXPermission.cpp - the OS permission for AMX tile data ------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "AMXPermission.h"

#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
// Linux x86-64: the arch_prctl system call and its AMX request
// (arch/x86/include/uapi/asm/prctl.h, arch/x86/include/asm/fpu/types.h).
constexpr int64_t kSysArchPrctl = 158;
constexpr int64_t kArchReqXcompPerm = 0x1023;
constexpr int64_t kXFeatureXTileData = 18;
// What a C constructor without a priority gets.
constexpr int32_t kDefaultPriority = 65535;

constexpr StringLiteral kRefused =
    "error: AMX: this process may not use AMX tiles: the kernel refused "
    "arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) (a CPU without "
    "AMX-TILE, or Linux before 5.16); the code was compiled with "
    "matrix-units=amx: compile it with matrix-units=avx512-bf16 or fma\n";
} // namespace

void mlir::gated_attention::addAMXPermissionRequest(ModuleOp module) {
  if (module.lookupSymbol(kAMXPermissionSymbol))
    return;
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type voidType = LLVM::LLVMVoidType::get(ctx);
  FailureOr<LLVM::LLVMFuncOp> syscall = LLVM::lookupOrCreateFn(
      b, module, "syscall", {i64}, i64, /*isVarArg=*/true);
  FailureOr<LLVM::LLVMFuncOp> write =
      LLVM::lookupOrCreateFn(b, module, "write", {i32, ptr, i64}, i64);
  FailureOr<LLVM::LLVMFuncOp> exit =
      LLVM::lookupOrCreateFn(b, module, "_exit", {i32}, voidType);
  if (failed(syscall) || failed(write) || failed(exit)) {
    module.emitError("cannot declare the C library functions that request "
                     "the AMX permission (syscall, write, _exit)");
    return;
  }

  b.setInsertionPointToEnd(module.getBody());
  auto request = LLVM::LLVMFuncOp::create(
      b, loc, kAMXPermissionSymbol, LLVM::LLVMFunctionType::get(voidType, {}),
      LLVM::Linkage::Internal);
  Block *entry = request.addEntryBlock(b);
  Block *refused = request.addBlock();
  Block *granted = request.addBlock();
  auto constant = [&](Type type, int64_t value) -> Value {
    return LLVM::ConstantOp::create(b, loc, type, value);
  };

  b.setInsertionPointToEnd(entry);
  Value status =
      LLVM::CallOp::create(b, loc, *syscall,
                           ValueRange{constant(i64, kSysArchPrctl),
                                      constant(i64, kArchReqXcompPerm),
                                      constant(i64, kXFeatureXTileData)})
          .getResult();
  Value ok = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, status,
                                  constant(i64, 0));
  LLVM::CondBrOp::create(b, loc, ok, granted, refused);

  // A load-time error cannot be returned: say so on stderr and stop
  // (_exit: no atexit handlers inside the loader).
  b.setInsertionPointToEnd(refused);
  Value message =
      LLVM::createGlobalString(loc, b, "__gated_attention_amx_refused",
                               kRefused, LLVM::Linkage::Internal);
  LLVM::CallOp::create(
      b, loc, *write,
      ValueRange{constant(i32, 2), message, constant(i64, kRefused.size())});
  LLVM::CallOp::create(b, loc, *exit, ValueRange{constant(i32, 1)});
  LLVM::UnreachableOp::create(b, loc);

  b.setInsertionPointToEnd(granted);
  LLVM::ReturnOp::create(b, loc, ValueRange{});

  b.setInsertionPointToEnd(module.getBody());
  LLVM::GlobalCtorsOp::create(b, loc,
                              b.getArrayAttr(FlatSymbolRefAttr::get(request)),
                              b.getI32ArrayAttr({kDefaultPriority}),
                              b.getArrayAttr(LLVM::ZeroAttr::get(ctx)));
}
