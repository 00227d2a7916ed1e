//===- gated-attention-opt.cpp - the gated-attention driver ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// mlir-opt with the gated_attention dialect, passes and pipelines. Upstream
// dialects, passes and extensions are all registered so that model graphs
// from any frontend can be compiled in one invocation.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::gated_attention::test {
void registerTestOnlineSoftmaxPass();
} // namespace mlir::gated_attention::test

int main(int argc, char **argv) {
  // `--version`: this project's version first (scripts compare it with the
  // Python package's), then the LLVM/MLIR it was built against.
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "gated-attention-opt " << GATED_ATTENTION_VERSION << "\n"
       << "  built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  });

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels through LLVM IR in-process.
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  mlir::registerAllPasses();

  mlir::gated_attention::registerAllDialects(registry);
  mlir::gated_attention::registerAllPasses();
  mlir::gated_attention::registerAllPipelines();
  mlir::gated_attention::test::registerTestOnlineSoftmaxPass();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "gated-attention optimizer driver\n", registry));
}
