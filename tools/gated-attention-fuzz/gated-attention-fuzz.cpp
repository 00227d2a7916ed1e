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
//     outside its target dialects, or it emitted an error on the way.
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
// LLVMFuzzerCustomMutator mutates what matters to the project (shapes,
// element types, the op's attributes, options) and otherwise defers to
// libFuzzer's byte-level mutator.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
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

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

constexpr size_t kHeaderSize = 5;

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

// Texts seen to parse and verify (a pool the mutator draws from) and hashes
// of texts seen not to: most mutants of invalid IR are invalid again, so
// the mutator usually swaps such a parent's text for a valid one first.
std::vector<std::string> validTexts;
llvm::DenseSet<uint64_t> validHashes, invalidHashes;

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
    registerAllGPUToLLVMIRTranslations(*registry);
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
      ok = dialect == "builtin" || dialect == "llvm" || dialect == "omp";
      break;
    case Pipeline::ToPTXSm90:
    case Pipeline::ToPTXSm80:
      ok = dialect == "builtin" || dialect == "llvm" || name == "gpu.binary" ||
           name == "gpu.launch_func";
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

/// Known upstream crashes while merely parsing, out of scope here (stock
/// mlir-opt crashes the same): linalg.transpose/broadcast/reduce parse
/// `permutation = [...]` / `dimensions = [...]` with DenseI64ArrayAttr::parse
/// and store its result even when that failed (NamedAttrList::set with a null
/// attribute): anything but a list of int64 literals crashes. A dense array
/// of `index` elements (`array<index: 16, 1>`) crashes the attribute parser
/// (it asks an index type for its float width). Such inputs are skipped so
/// that a run is not stopped by them again and again.
bool hitsKnownUpstreamParserCrash(llvm::StringRef text) {
  for (size_t at = text.find("array<"); at != llvm::StringRef::npos;
       at = text.find("array<", at + 1))
    if (text.drop_front(at + std::strlen("array<"))
            .ltrim()
            .starts_with("index"))
      return true;
  for (llvm::StringRef key : {"permutation", "dimensions"}) {
    for (size_t at = text.find(key); at != llvm::StringRef::npos;
         at = text.find(key, at + 1)) {
      llvm::StringRef rest = text.drop_front(at + key.size()).ltrim();
      if (!rest.consume_front("="))
        continue;
      rest = rest.ltrim();
      if (rest.starts_with("array<"))
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
  stage("print output");
  printed = print(*module);
  stage("parse back output");
  checkParsesBack(printed, "pipeline output does not parse back", pipelineText);
  stage("done");
  return 0;
}

//===----------------------------------------------------------------------===//
// Structure-aware mutator
//===----------------------------------------------------------------------===//

namespace {

using Rng = std::minstd_rand;

size_t below(Rng &rng, size_t n) { return n ? rng() % n : 0; }

template <size_t N> const char *choose(Rng &rng, const char *const (&t)[N]) {
  return t[below(rng, N)];
}

const char *const kDims[] = {"0",
                             "1",
                             "2",
                             "3",
                             "4",
                             "7",
                             "8",
                             "16",
                             "17",
                             "32",
                             "64",
                             "128",
                             "256",
                             "1024",
                             "?",
                             "?",
                             "65536",
                             "1048576",
                             "2147483648",
                             "1099511627776",
                             "4611686018427387904",
                             "9223372036854775807"};
const char *const kElementTypes[] = {"f32",      "f16",  "bf16",        "f64",
                                     "i32",      "i8",   "i1",          "index",
                                     "f8E4M3FN", "tf32", "complex<f32>"};
const char *const kGates[] = {"sigmoid", "silu", "ns_sigmoid", "tanh",
                              "none",    "relu", "Sigmoid",    ""};
const char *const kCombines[] = {"mul", "add", "sub", ""};
const char *const kScales[] = {
    "0.125 : f32",  "0.0 : f32",        "-1.0 : f32",       "1.0e+38 : f32",
    "3.4e38 : f32", "0x7FC00000 : f32", "0x7F800000 : f32", "1.0e-45 : f32",
    "1 : i32",      "0.5 : f64",        "0.5 : f16",        "0.5"};
const char *const kAttrs[] = {"causal",
                              "is_causal",
                              "causal = false",
                              "causal = true",
                              "scale = 0.5 : f32",
                              "scael = 0.5 : f32",
                              "scale = 0x7FC00000 : f32",
                              "gate = #gated_attention.gate<silu>",
                              "gate = #gated_attention.gate<ns_sigmoid>",
                              "gate = #gated_attention.gate<sigmoid>",
                              "gate = \"sigmoid\"",
                              "combine = #gated_attention.combine<add>",
                              "combine = #gated_attention.combine<mul>",
                              "gated_attention.tag = 1",
                              "foo.bar"};

struct Span {
  size_t begin, end;
};

bool isWordChar(char c) { return llvm::isAlnum(c) || c == '_'; }

/// Dimensions of every tensor/memref/vector type: the spans of `N` or `?`
/// before an `x`.
std::vector<Span> findDims(const std::string &s) {
  std::vector<Span> dims;
  for (const char *prefix : {"tensor<", "memref<", "vector<"}) {
    for (size_t at = s.find(prefix); at != std::string::npos;
         at = s.find(prefix, at + 1)) {
      size_t i = at + std::strlen(prefix);
      while (i < s.size()) {
        size_t j = i;
        if (s[j] == '?')
          ++j;
        else
          while (j < s.size() && llvm::isDigit(s[j]))
            ++j;
        if (j == i || j >= s.size() || s[j] != 'x')
          break;
        dims.push_back({i, j});
        i = j + 1;
      }
    }
  }
  return dims;
}

/// Whole-word occurrences of any of `words`.
template <size_t N>
std::vector<Span> findWords(const std::string &s,
                            const char *const (&words)[N]) {
  std::vector<Span> found;
  for (const char *w : words) {
    size_t len = std::strlen(w);
    if (!len)
      continue;
    for (size_t at = s.find(w); at != std::string::npos;
         at = s.find(w, at + 1)) {
      bool startOk = at == 0 || !isWordChar(s[at - 1]);
      bool endOk = at + len >= s.size() || !isWordChar(s[at + len]);
      if (startOk && endOk)
        found.push_back({at, at + len});
    }
  }
  return found;
}

/// Replaces every occurrence (in `spans`) of the text of one span by `with`.
void replaceAllLike(std::string &s, std::vector<Span> spans, Span like,
                    const std::string &with) {
  std::string old = s.substr(like.begin, like.end - like.begin);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it)
    if (s.compare(it->begin, it->end - it->begin, old) == 0)
      s.replace(it->begin, it->end - it->begin, with);
}

void sortSpans(std::vector<Span> &spans) {
  std::sort(spans.begin(), spans.end(),
            [](Span a, Span b) { return a.begin < b.begin; });
}

bool mutateDims(std::string &s, Rng &rng) {
  std::vector<Span> dims = findDims(s);
  if (dims.empty())
    return false;
  sortSpans(dims);
  Span d = dims[below(rng, dims.size())];
  std::string with = choose(rng, kDims);
  if (rng() % 5) // consistently, as a shape parameter (D, Sq, ...)
    replaceAllLike(s, dims, d, with);
  else
    s.replace(d.begin, d.end - d.begin, with);
  return true;
}

bool mutateElementType(std::string &s, Rng &rng) {
  std::vector<Span> types = findWords(s, kElementTypes);
  if (types.empty())
    return false;
  sortSpans(types);
  Span t = types[below(rng, types.size())];
  // Mostly one float type for another: arith and math ops stay valid.
  static const char *const kFloats[] = {"f32", "f16", "bf16", "f64"};
  std::string with =
      rng() % 4 ? choose(rng, kFloats) : choose(rng, kElementTypes);
  if (rng() % 5) // usually everywhere, so that the op stays consistent
    replaceAllLike(s, types, t, with);
  else
    s.replace(t.begin, t.end - t.begin, with);
  return true;
}

/// Replaces the word inside `#gated_attention.<what><...>`.
bool mutateEnumAttr(std::string &s, Rng &rng, const char *what,
                    const char *const *values, size_t n) {
  std::string key = std::string("#gated_attention.") + what + "<";
  std::vector<size_t> at;
  for (size_t i = s.find(key); i != std::string::npos; i = s.find(key, i + 1))
    at.push_back(i + key.size());
  if (at.empty())
    return false;
  size_t b = at[below(rng, at.size())];
  size_t e = s.find('>', b);
  if (e == std::string::npos)
    return false;
  s.replace(b, e - b, values[below(rng, n)]);
  return true;
}

bool mutateScale(std::string &s, Rng &rng) {
  size_t at = s.find("scale = ");
  if (at == std::string::npos)
    return false;
  size_t b = at + 8;
  size_t e = b;
  // The value and its type: up to the end of the attribute.
  while (e < s.size() && s[e] != ',' && s[e] != '}' && s[e] != '\n')
    ++e;
  s.replace(b, e - b, choose(rng, kScales));
  return true;
}

/// Adds an attribute to (or drops the dictionary of) a gated_attention op.
bool mutateOpAttrs(std::string &s, Rng &rng) {
  std::vector<size_t> ops;
  const std::string key = "gated_attention.attention";
  for (size_t i = s.find(key); i != std::string::npos; i = s.find(key, i + 1))
    ops.push_back(i + key.size());
  if (ops.empty())
    return false;
  size_t at = ops[below(rng, ops.size())];
  size_t colon = s.find(" : ", at);
  size_t brace = s.find('{', at);
  size_t eol = s.find('\n', at);
  std::string attr = choose(rng, kAttrs);
  bool hasDict = brace != std::string::npos &&
                 (colon == std::string::npos || brace < colon) &&
                 (eol == std::string::npos || brace < eol);
  if (hasDict) {
    size_t close = s.find('}', brace);
    if (close != std::string::npos && (rng() % 3 == 0)) {
      s.erase(brace, close - brace + 1);
      return true;
    }
    s.insert(brace + 1, attr + ", ");
    return true;
  }
  if (colon == std::string::npos || (eol != std::string::npos && colon > eol))
    return false;
  s.insert(colon, " {" + attr + "}");
  return true;
}

/// Duplicates, drops or swaps a line.
bool mutateLines(std::string &s, Rng &rng) {
  std::vector<Span> lines;
  for (size_t b = 0; b < s.size();) {
    size_t e = s.find('\n', b);
    e = e == std::string::npos ? s.size() : e + 1;
    lines.push_back({b, e});
    b = e;
  }
  if (lines.size() < 2)
    return false;
  Span l = lines[below(rng, lines.size())];
  std::string line = s.substr(l.begin, l.end - l.begin);
  switch (below(rng, 3)) {
  case 0:
    s.insert(l.begin, line);
    break;
  case 1:
    s.erase(l.begin, l.end - l.begin);
    break;
  default: {
    Span m = lines[below(rng, lines.size())];
    if (m.begin == l.begin)
      return false;
    std::string other = s.substr(m.begin, m.end - m.begin);
    if (m.begin > l.begin) {
      s.replace(m.begin, m.end - m.begin, line);
      s.replace(l.begin, l.end - l.begin, other);
    } else {
      s.replace(l.begin, l.end - l.begin, other);
      s.replace(m.begin, m.end - m.begin, line);
    }
  }
  }
  return true;
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  Rng rng(seed);
  if (maxSize <= kHeaderSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  if (size < kHeaderSize) {
    for (size_t i = size; i < kHeaderSize; ++i)
      data[i] = rng();
    size = kHeaderSize;
  }
  // A parent whose text did not parse or verify: usually mutate a valid
  // text instead (with the parent's pipeline and options).
  if (!validTexts.empty() && rng() % 4 != 0 &&
      invalidHashes.contains(llvm::xxh3_64bits(llvm::StringRef(
          reinterpret_cast<char *>(data) + kHeaderSize, size - kHeaderSize)))) {
    const std::string &valid = validTexts[below(rng, validTexts.size())];
    if (kHeaderSize + valid.size() <= maxSize) {
      std::memcpy(data + kHeaderSize, valid.data(), valid.size());
      size = kHeaderSize + valid.size();
    }
  }
  // Weights out of 100. Most mutations keep the IR valid (consistent shape
  // and type changes, the pipeline and options), so that most inputs reach
  // a pipeline; byte-level ones mostly exercise upstream's parser.
  unsigned choice = below(rng, 100);
  if (choice < 15) { // the pipeline or an option
    size_t i = below(rng, kHeaderSize);
    data[i] = rng() & 1 ? rng() : data[i] ^ (1u << below(rng, 8));
    return size;
  }
  if (choice >= 88) { // libFuzzer's own, on the text (sometimes all bytes)
    if (choice >= 98)
      return LLVMFuzzerMutate(data, size, maxSize);
    return kHeaderSize + LLVMFuzzerMutate(data + kHeaderSize,
                                          size - kHeaderSize,
                                          maxSize - kHeaderSize);
  }
  std::string text(reinterpret_cast<char *>(data) + kHeaderSize,
                   size - kHeaderSize);
  bool changed = false;
  if (choice < 45)
    changed = mutateDims(text, rng);
  else if (choice < 60)
    changed = mutateElementType(text, rng);
  else if (choice < 65)
    changed = mutateEnumAttr(text, rng, "gate", kGates, std::size(kGates));
  else if (choice < 69)
    changed =
        mutateEnumAttr(text, rng, "combine", kCombines, std::size(kCombines));
  else if (choice < 74)
    changed = mutateScale(text, rng);
  else if (choice < 82)
    changed = mutateOpAttrs(text, rng);
  else
    changed = mutateLines(text, rng);
  if (!changed || kHeaderSize + text.size() > maxSize)
    return kHeaderSize + LLVMFuzzerMutate(data + kHeaderSize,
                                          size - kHeaderSize,
                                          maxSize - kHeaderSize);
  std::memcpy(data + kHeaderSize, text.data(), text.size());
  return kHeaderSize + text.size();
}
