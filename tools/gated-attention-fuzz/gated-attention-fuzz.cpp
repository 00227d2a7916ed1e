//===- gated-attention-fuzz.cpp - libFuzzer target over the pipelines -----===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Parses an input as MLIR, verifies it and runs one of the project's
// pipelines on it, in process, the way gated-attention-opt does. Errors
// (parse, verifier, pass failures) are normal outcomes. Findings are
// crashes, sanitizer reports, timeouts and OOMs (libFuzzer's), and the
// checks below, which abort:
//   - the input prints to text that does not parse back;
//   - a pipeline succeeds but its output does not parse back, keeps ops
//     outside its target dialects, or it emitted an error on the way;
//   - the LLVM IR translation of a CPU or PTX pipeline's output fails
//     without an error (it crashing is a finding as any crash is).
//
// Input: a header of kHeaderSize bytes, then MLIR text.
//   byte 0: bits 0-2 the pipeline (Pipeline below); bits 3-6 which of the
//           options bytes 1-4 are given (else the default); bit 7 openmp=0
//           for the CPU pipeline, a kernel= option (from byte 4's high
//           half) for the GPU ones.
//   bytes 1-4: options, each an index into a table of values (in range,
//           out of range and malformed): query-block, key-block, raise for
//           the CPU pipelines; warps, key-block, rows-per-block, chip for
//           the PTX ones.
// GATED_ATTENTION_FUZZ_VERBOSE=1 prints the pipeline and each stage to
// stderr (scripts/fuzz uses it to triage crashes); the equivalent command
// is `gated-attention-opt --mlir-disable-threading --pass-pipeline='P' in.mlir`
// with the text after the header as in.mlir.
//
// LLVMFuzzerCustomMutator (Mutator.cpp) mutates what matters to the project
// (shapes, element types, the op's attributes, options) and otherwise defers
// to libFuzzer's byte-level mutator.
//
//===----------------------------------------------------------------------===//

#include "Mutator.h"

#include "GatedAttention/InitAll.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
using gated_attention_fuzz::invalidHashes;
using gated_attention_fuzz::kHeaderSize;
using gated_attention_fuzz::validTexts;

namespace {

enum class Pipeline : uint8_t {
  Verify,    // parse, verify, print and parse back only
  ToLLVM,    // --gated-attention-to-llvm
  ToLLVMRef, // --gated-attention-to-llvm=reference=1
  ToPTXSm90, // --gated-attention-to-ptx (chip=sm_90)
  ToPTXSm80, // --gated-attention-to-ptx=chip=sm_80
  Raise,     // --gated-attention-raise
  Tile,      // --gated-attention-tile
  ToNVGPU,   // --convert-gated-attention-to-nvgpu (no NVPTX backend)
};

// Option values: defaults, edges, out of range and malformed.
const char *const kIntValues[] = {"0",
                                  "1",
                                  "2",
                                  "3",
                                  "4",
                                  "5",
                                  "7",
                                  "8",
                                  "16",
                                  "17",
                                  "32",
                                  "48",
                                  "64",
                                  "96",
                                  "128",
                                  "256",
                                  "512",
                                  "1024",
                                  "4096",
                                  "65536",
                                  "2147483647",
                                  "2147483648",
                                  "4294967296",
                                  "1099511627776",
                                  "4611686018427387904",
                                  "9223372036854775807",
                                  "-1",
                                  "-8",
                                  "-9223372036854775808",
                                  "18446744073709551616",
                                  "",
                                  "x",
                                  "1.5",
                                  "0x40",
                                  "+4"};
const char *const kChips[] = {
    "sm_90",  "sm_80", "sm_86", "sm_89", "sm_90a", "sm_75", "sm_70", "sm_100",
    "sm_120", "sm_52", "",      "sm90",  "foo",    "SM_90", "sm_9",  "sm_800"};

const char *const kKernels[] = {"wgmma", "mma-sync", "auto",   "tma",
                                "",      "WGMMA",    "wgmma ", "mma_sync"};

template <size_t N> const char *pick(const char *const (&table)[N], uint8_t b) {
  return table[b % N];
}

bool verbose() {
  static bool v = [] {
    const char *env = std::getenv("GATED_ATTENTION_FUZZ_VERBOSE");
    return env && *env && std::strcmp(env, "0") != 0;
  }();
  return v;
}

// How far inputs get, per pipeline: the last stage each one reached.
// GATED_ATTENTION_FUZZ_STATS=PATH: each process keeps its counts in
// PATH.<pid> (one JSON object, replaced every minute and at exit, so that a
// run stopped by a signal, where libFuzzer exits without atexit handlers,
// still has them).
const char *lastStage = "";
std::map<std::string, std::map<std::string, uint64_t>> outcomes;

void stage(const char *name) {
  lastStage = name;
  if (verbose())
    llvm::errs() << "gated-attention-fuzz: stage: " << name << "\n";
}

void writeOutcomes() {
  const char *path = std::getenv("GATED_ATTENTION_FUZZ_STATS");
  if (!path || !*path || outcomes.empty())
    return;
  std::string file = std::string(path) + "." +
                     std::to_string(llvm::sys::Process::getProcessId());
  std::string partial = file + ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(partial, ec);
    if (ec)
      return;
    os << "{";
    llvm::ListSeparator outer;
    for (auto &[pipeline, stages] : outcomes) {
      os << outer << "\"" << pipeline << "\": {";
      llvm::ListSeparator inner;
      for (auto &[name, count] : stages)
        os << inner << "\"" << name << "\": " << count;
      os << "}";
    }
    os << "}\n";
  }
  (void)llvm::sys::fs::rename(partial, file);
}

void writeOutcomesEveryMinute() {
  static auto last = std::chrono::steady_clock::now();
  auto now = std::chrono::steady_clock::now();
  if (now - last < std::chrono::minutes(1))
    return;
  last = now;
  writeOutcomes();
}

llvm::DenseSet<uint64_t> validHashes;

void noteValidity(llvm::StringRef text, bool valid, unsigned random) {
  uint64_t hash = llvm::xxh3_64bits(text);
  if (!valid) {
    if (invalidHashes.size() > (1u << 20))
      invalidHashes.clear();
    invalidHashes.insert(hash);
    return;
  }
  if (!validHashes.insert(hash).second)
    return;
  constexpr size_t kPoolSize = 512;
  if (validTexts.size() < kPoolSize)
    validTexts.push_back(text.str());
  else
    validTexts[random % kPoolSize] = text.str();
}

/// Counts the stage an input stopped at when it goes out of scope.
struct OutcomeCounter {
  explicit OutcomeCounter(const char *pipeline) : pipeline(pipeline) {
    lastStage = "skipped";
  }
  ~OutcomeCounter() {
    ++outcomes[pipeline][lastStage];
    writeOutcomesEveryMinute();
  }
  const char *pipeline;
};

/// The textual pipeline that the header selects (parsed by the same
/// registry as the tool's command line), or std::nullopt for Verify.
std::optional<std::string> pipelineFor(const uint8_t *h, Pipeline &kind) {
  kind = static_cast<Pipeline>(h[0] & 7);
  unsigned given = (h[0] >> 3) & 15;
  auto opt = [&](unsigned i, const char *name, const char *value) {
    return (given >> i) & 1 ? std::string(" ") + name + "=" + value
                            : std::string();
  };
  std::string p;
  switch (kind) {
  case Pipeline::Verify:
    return std::nullopt;
  case Pipeline::ToLLVM:
  case Pipeline::ToLLVMRef:
    p = "gated-attention-to-llvm{";
    if (kind == Pipeline::ToLLVMRef)
      p += " reference=1";
    if (h[0] & 128)
      p += " openmp=0";
    p += opt(0, "query-block", pick(kIntValues, h[1]));
    p += opt(1, "key-block", pick(kIntValues, h[2]));
    // raise=0 compiles unfused attention as written; other values are
    // errors (or 1).
    p += opt(2, "raise", pick(kIntValues, h[3]));
    break;
  case Pipeline::ToPTXSm90:
  case Pipeline::ToPTXSm80:
    p = "gated-attention-to-ptx{";
    if (kind == Pipeline::ToPTXSm80 && !((given >> 3) & 1))
      p += " chip=sm_80";
    p += opt(0, "warps", pick(kIntValues, h[1]));
    p += opt(1, "key-block", pick(kIntValues, h[2]));
    p += opt(2, "rows-per-block", pick(kIntValues, h[3]));
    p += opt(3, "chip", pick(kChips, h[4]));
    // The high bit picks the kernel from the chip byte's high half.
    if (h[0] & 128)
      p += std::string(" kernel=") + pick(kKernels, h[4] >> 4);
    break;
  case Pipeline::Raise:
    p = "gated-attention-raise{";
    break;
  case Pipeline::Tile:
    p = "gated-attention-tile{";
    p += opt(0, "query-block", pick(kIntValues, h[1]));
    p += opt(1, "key-block", pick(kIntValues, h[2]));
    break;
  case Pipeline::ToNVGPU:
    p = "convert-gated-attention-to-nvgpu{";
    p += opt(0, "warps", pick(kIntValues, h[1]));
    p += opt(1, "key-block", pick(kIntValues, h[2]));
    p += opt(3, "chip", pick(kChips, h[4]));
    if (h[0] & 128)
      p += std::string(" kernel=") + pick(kKernels, h[4] >> 4);
    break;
  }
  return "builtin.module(" + p + "})";
}

const DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    auto *registry = new DialectRegistry;
    registerAllDialects(*registry);
    registerAllExtensions(*registry);
    registerAllToLLVMIRTranslations(*registry);
    gated_attention::registerAllDialects(*registry);
    return registry;
  }();
  return *r;
}

/// Collects diagnostics instead of printing them: failing is a normal
/// outcome. Keeps the first error for the reports below.
struct Diagnostics {
  explicit Diagnostics(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error) {
            ++errors;
            if (firstError.empty())
              firstError = diag.str();
          }
          return success();
        }) {}
  ScopedDiagnosticHandler handler;
  unsigned errors = 0;
  std::string firstError;
};

[[noreturn]] void finding(const char *what, llvm::StringRef detail,
                          llvm::StringRef pipeline) {
  llvm::errs() << "gated-attention-fuzz: FINDING: " << what << "\n"
               << "  pipeline: " << (pipeline.empty() ? "(none)" : pipeline)
               << "\n  " << detail << "\n";
  llvm::errs().flush();
  std::abort();
}

OwningOpRef<ModuleOp> parse(llvm::StringRef text, MLIRContext &ctx,
                            bool verifyAfterParse) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz-input"), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr,
                                   ParserConfig(&ctx, verifyAfterParse));
}

std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// Parses `text` (printed by us) in a fresh context; aborts if it does not
/// parse or verify.
void checkParsesBack(const std::string &text, const char *what,
                     llvm::StringRef pipeline) {
  MLIRContext ctx(registry(), MLIRContext::Threading::DISABLED);
  Diagnostics diags(ctx);
  if (!parse(text, ctx, /*verifyAfterParse=*/true))
    finding(what, diags.firstError, pipeline);
}

/// The dialects a lowered module may hold.
void checkLowered(ModuleOp module, Pipeline kind, llvm::StringRef pipeline) {
  module.walk([&](Operation *op) {
    llvm::StringRef dialect = op->getName().getDialectNamespace();
    llvm::StringRef name = op->getName().getStringRef();
    bool ok = true;
    switch (kind) {
    case Pipeline::ToLLVM:
    case Pipeline::ToLLVMRef:
      ok = (dialect == "builtin" || dialect == "llvm" || dialect == "omp") &&
           !isa<UnrealizedConversionCastOp>(op);
      break;
    case Pipeline::ToPTXSm90:
    case Pipeline::ToPTXSm80:
      ok = ((dialect == "builtin" || dialect == "llvm") &&
            !isa<UnrealizedConversionCastOp>(op)) ||
           name == "gpu.binary" || name == "gpu.launch_func";
      break;
    case Pipeline::Tile:
      ok = name != "gated_attention.attention";
      break;
    default:
      break;
    }
    if (!ok)
      finding("pipeline succeeded but left an op it does not lower",
              ("op: " + name).str(), pipeline);
  });
}

/// `text` without the whitespace, NUL characters and `//` comments that the
/// MLIR lexer skips before a token.
llvm::StringRef skipTrivia(llvm::StringRef text) {
  static constexpr char kSpace[] = " \t\r\n\v\f";
  while (true) {
    text = text.ltrim(llvm::StringRef(kSpace, sizeof(kSpace))); // with NUL
    if (!text.starts_with("//"))
      return text;
    text = text.drop_until([](char c) { return c == '\n'; });
  }
}

/// Known upstream crashes while merely parsing, out of scope here (stock
/// mlir-opt crashes the same): linalg.transpose/broadcast/reduce parse
/// `permutation = [...]` / `dimensions = [...]` with DenseI64ArrayAttr::parse
/// and store its result even when that failed (NamedAttrList::set with a null
/// attribute): anything but a list of int64 literals crashes. A dense array
/// of `index` elements (`array<index: 16, 1>`) crashes the attribute parser
/// (it asks an index type for its float width). Such inputs are skipped so
/// that a run is not stopped by them again and again.
bool hitsKnownUpstreamParserCrash(llvm::StringRef text) {
  // Tokens may be apart: `array // c\n < index`.
  const llvm::StringRef array = "array";
  for (size_t at = text.find(array); at != llvm::StringRef::npos;
       at = text.find(array, at + 1)) {
    llvm::StringRef rest = skipTrivia(text.drop_front(at + array.size()));
    if (rest.consume_front("<") && skipTrivia(rest).starts_with("index"))
      return true;
  }
  for (llvm::StringRef key : {"permutation", "dimensions"}) {
    for (size_t at = text.find(key); at != llvm::StringRef::npos;
         at = text.find(key, at + 1)) {
      llvm::StringRef rest = skipTrivia(text.drop_front(at + key.size()));
      if (!rest.consume_front("="))
        continue;
      rest = skipTrivia(rest);
      if (rest.starts_with("array"))
        continue; // the generic form fails cleanly
      if (!rest.consume_front("["))
        return true;
      size_t close = rest.find(']');
      if (close == llvm::StringRef::npos)
        return true;
      llvm::SmallVector<llvm::StringRef> items;
      rest.take_front(close).split(items, ',');
      for (llvm::StringRef item : items) {
        item = item.trim();
        int64_t value;
        if (items.size() == 1 && item.empty())
          break; // []
        if (item.getAsInteger(10, value))
          return true;
      }
    }
  }
  return false;
}

/// Upstream's verifier of `llvm.mlir.ifunc` dereferences its resolver
/// without checking that the symbol exists (stock mlir-opt crashes the
/// same way): such inputs are skipped after parsing, before verification.
bool hitsKnownUpstreamVerifierCrash(ModuleOp module) {
  WalkResult result = module->walk([](LLVM::IFuncOp ifunc) {
    FlatSymbolRefAttr resolver = ifunc.getResolverAttr();
    return resolver && SymbolTable::lookupNearestSymbolFrom(ifunc,
                                                            resolver.getAttr())
               ? WalkResult::advance()
               : WalkResult::interrupt();
  });
  return result.wasInterrupted();
}

} // namespace

// Allocators in LLVM headers (BumpPtrAllocator) poison their slabs when
// compiled with ASan, as the project's code is; libMLIR.so's copies, which
// hand out memory from the same slabs, do not unpoison it. Honouring that
// poisoning would report every such write as use-after-poison.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0:detect_leaks=0";
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerAllPasses();
  gated_attention::registerAllPasses();
  gated_attention::registerAllPipelines();
  (void)registry();
  std::atexit(writeOutcomes);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < kHeaderSize)
    return 0;
  Pipeline kind;
  std::optional<std::string> pipeline = pipelineFor(data, kind);
  llvm::StringRef pipelineText = pipeline ? llvm::StringRef(*pipeline) : "";
  llvm::StringRef text(reinterpret_cast<const char *>(data) + kHeaderSize,
                       size - kHeaderSize);
  if (verbose())
    llvm::errs() << "gated-attention-fuzz: pipeline: "
                 << (pipeline ? *pipeline : "(verify only)") << "\n";
  static const char *const kNames[] = {
      "verify",      "to-llvm", "to-llvm-ref", "to-ptx-sm90",
      "to-ptx-sm80", "raise",   "tile",        "to-nvgpu"};
  OutcomeCounter counter(kNames[static_cast<unsigned>(kind)]);

  if (hitsKnownUpstreamParserCrash(text))
    return 0;

  MLIRContext ctx(registry(), MLIRContext::Threading::DISABLED);
  Diagnostics diags(ctx);
  llvm::scope_exit explain([&] {
    if (verbose() && !diags.firstError.empty())
      llvm::errs() << "gated-attention-fuzz: first error: " << diags.firstError
                   << "\n";
  });

  stage("parse");
  OwningOpRef<ModuleOp> module = parse(text, ctx, /*verifyAfterParse=*/false);
  if (!module) {
    noteValidity(text, false, 0);
    return 0;
  }
  if (hitsKnownUpstreamVerifierCrash(*module)) {
    stage("skipped");
    return 0;
  }
  stage("verify");
  if (failed(verify(*module))) {
    noteValidity(text, false, 0);
    return 0;
  }
  noteValidity(text, true, static_cast<unsigned>(size * 2654435761u));
  stage("print input");
  std::string printed = print(*module);
  stage("parse back input");
  checkParsesBack(printed, "valid input prints to text that does not parse",
                  "");
  if (!pipeline) {
    stage("done");
    return 0;
  }

  stage("parse pipeline");
  PassManager pm(&ctx, ModuleOp::getOperationName());
  // The passes inside `builtin.module(...)`, added to the module's manager.
  llvm::StringRef inner = llvm::StringRef(*pipeline)
                              .drop_front(std::strlen("builtin.module("))
                              .drop_back();
  if (failed(parsePassPipeline(inner, pm, llvm::nulls())))
    return 0;
  if (verbose()) {
    llvm::errs() << "gated-attention-fuzz: expanded: ";
    pm.printAsTextualPipeline(llvm::errs());
    llvm::errs() << "\n";
  }
  stage("run pipeline");
  unsigned errorsBefore = diags.errors;
  if (failed(pm.run(*module)))
    return 0;
  if (diags.errors != errorsBefore)
    finding("pipeline succeeded after emitting an error", diags.firstError,
            pipelineText);
  stage("check output");
  checkLowered(*module, kind, pipelineText);
  if (kind == Pipeline::ToLLVM || kind == Pipeline::ToLLVMRef ||
      kind == Pipeline::ToPTXSm90 || kind == Pipeline::ToPTXSm80) {
    // What the user does next with the output (mlir-translate, or the
    // ExecutionEngine): the host module, PTX embedded, becomes LLVM IR. The
    // pipelines end in verify-translation, so output they accepted must
    // translate: a failure here, with an error or without, is a finding.
    stage("translate output");
    llvm::LLVMContext llvmContext;
    if (!translateModuleToLLVMIR(*module, llvmContext))
      finding("the pipeline accepted output that LLVM IR translation rejects",
              diags.firstError, pipelineText);
  }
  stage("print output");
  printed = print(*module);
  stage("parse back output");
  checkParsesBack(printed, "pipeline output does not parse back", pipelineText);
  stage("done");
  return 0;
}
