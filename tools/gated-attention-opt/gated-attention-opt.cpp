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
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace mlir::gated_attention::test {
void registerTestAMXEmulationPass();
void registerTestOnlineSoftmaxPass();
void registerTestRaiseMatchersPass();
} // namespace mlir::gated_attention::test

namespace {
/// The last pass of every run: fails if an error was reported before it.
class FailOnErrorsPass
    : public mlir::PassWrapper<FailOnErrorsPass, mlir::OperationPass<>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FailOnErrorsPass)

  explicit FailOnErrorsPass(std::shared_ptr<bool> sawError)
      : sawError(std::move(sawError)) {}
  llvm::StringRef getArgument() const override {
    return "gated-attention-opt-fail-on-errors";
  }
  void runOnOperation() override {
    if (*sawError)
      signalPassFailure();
  }

private:
  std::shared_ptr<bool> sawError;
};

/// Upstream's driver prints "Request ignored." for a plugin it cannot load
/// and goes on, to exit 0 without the plugin's gates and passes. Here every
/// plugin named on the command line must load (upstream loads it again, as
/// usual: dlopen hands back the same library).
bool pluginsLoad(int argc, char **argv) {
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--")
      break;
    if (!arg.consume_front("-"))
      continue;
    arg.consume_front("-");
    for (llvm::StringRef kind : {"pass", "dialect"}) {
      std::string option = ("load-" + kind + "-plugin").str();
      std::string path;
      if (arg == option && i + 1 < argc)
        path = argv[++i];
      else if (arg.starts_with(option + "="))
        path = arg.drop_front(option.size() + 1).str();
      else
        continue;
      llvm::Error error = kind == "pass"
                              ? mlir::PassPlugin::load(path).takeError()
                              : mlir::DialectPlugin::load(path).takeError();
      if (error) {
        llvm::errs() << "gated-attention-opt: error: cannot load the " << kind
                     << " plugin '" << path
                     << "': " << llvm::toString(std::move(error)) << "\n";
        ok = false;
      }
    }
  }
  return ok;
}
} // namespace

int main(int argc, char **argv) {
  // `--version`: this project's version first (scripts compare it with the
  // Python package's), then the LLVM/MLIR it was built against.
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "gated-attention-opt " << GATED_ATTENTION_VERSION << "\n"
       << "  built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  });

  if (!pluginsLoad(argc, argv))
    return EXIT_FAILURE;

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels through LLVM IR in-process.
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  mlir::registerAllPasses();

  mlir::gated_attention::registerAllDialects(registry);
  mlir::gated_attention::registerAllPasses();
  mlir::gated_attention::registerAllPipelines();
  mlir::gated_attention::test::registerTestAMXEmulationPass();
  mlir::gated_attention::test::registerTestOnlineSoftmaxPass();
  mlir::gated_attention::test::registerTestRaiseMatchersPass();

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "gated-attention optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  // An error diagnostic fails the run even when the pass that emitted it
  // went on (upstream's gpu-module-to-binary reports a missing CUDA toolkit
  // and succeeds): no exit 0 and no output file after an error.
  config.setPassPipelineSetupFn(
      [parsed = config](mlir::PassManager &pm) -> mlir::LogicalResult {
        if (mlir::failed(parsed.setupPassPipeline(pm)))
          return mlir::failure();
        auto sawError = std::make_shared<bool>(false);
        pm.getContext()->getDiagEngine().registerHandler(
            [sawError](mlir::Diagnostic &diag) {
              if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
                *sawError = true;
              return mlir::failure(); // Still printed by the next handler.
            });
        pm.addPass(std::make_unique<FailOnErrorsPass>(sawError));
        return mlir::success();
      });

  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &message);
  if (!input) {
    llvm::errs() << message << "\n";
    return EXIT_FAILURE;
  }
  // The output is written only once the run succeeded: after an error, an
  // existing output file is left untouched.
  std::string result;
  llvm::raw_string_ostream os(result);
  if (mlir::failed(mlir::MlirOptMain(os, std::move(input), registry, config)))
    return EXIT_FAILURE;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &message);
  if (!output) {
    llvm::errs() << message << "\n";
    return EXIT_FAILURE;
  }
  output->os() << result;
  output->keep();
  return EXIT_SUCCESS;
}
