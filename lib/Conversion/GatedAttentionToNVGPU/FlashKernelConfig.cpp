//===- FlashKernelConfig.cpp - what a flash kernel depends on -------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashKernelConfig.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/TmaPipeline.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/WgmmaAtom.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

/// The fields both ops share (`op` is an AttentionOp or a
/// PagedAttentionOp): heads and head dims are those of the op's accessors.
template <typename OpT>
static FlashKernelConfig getCommon(OpT op, FlashKernelKind kind, int64_t warps,
                                   int64_t keyBlock) {
  FlashKernelConfig cfg;
  cfg.kind = kind;
  cfg.elementType = op.getQueryType().getElementType();
  cfg.numQueryHeads = op.getNumQueryHeads();
  cfg.headDim = op.getHeadDim();
  cfg.valueHeadDim = op.getValueHeadDim();
  cfg.causal = op.getCausal();
  cfg.scale = op.getScaleValue();
  cfg.gate = op.getGateAttr();
  cfg.combine = op.getCombine();
  cfg.warps = warps;
  cfg.keyBlock = keyBlock;
  cfg.hasGate = op.hasGate();
  return cfg;
}

FlashKernelConfig FlashKernelConfig::get(Operation *op, FlashKernelKind kind,
                                         int64_t warps, int64_t keyBlock) {
  if (auto paged = dyn_cast<PagedAttentionOp>(op)) {
    FlashKernelConfig cfg = getCommon(paged, kind, warps, keyBlock);
    // Gate [T, Hg, Dg]; caches [NB, P, Hkv, D]: rows are tokens, packed.
    cfg.numKeyValueHeads = paged.getNumKVHeads();
    cfg.numGateHeads = paged.hasGate() ? paged.getGateType().getDimSize(1) : 1;
    cfg.gateWidth = paged.hasGate() ? paged.getGateType().getDimSize(2) : 1;
    cfg.pageSize = paged.getPageSize();
    int64_t hq = cfg.numQueryHeads, hkv = cfg.numKeyValueHeads;
    cfg.rowStrides = {hq * cfg.headDim, hkv * cfg.headDim,
                      hkv * cfg.valueHeadDim, cfg.numGateHeads * cfg.gateWidth,
                      hq * cfg.valueHeadDim};
    return cfg;
  }
  auto dense = cast<AttentionOp>(op);
  FlashKernelConfig cfg = getCommon(dense, kind, warps, keyBlock);
  cfg.numKeyValueHeads = dense.getKeyType().getDimSize(1);
  cfg.numGateHeads = dense.hasGate() ? dense.getGateType().getDimSize(1) : 1;
  cfg.gateWidth = dense.hasGate() ? dense.getGateType().getDimSize(3) : 1;
  cfg.rowStrides = dense.getRowStrides();
  cfg.singleQuery = dense.getQueryType().getDimSize(2) == 1;
  return cfg;
}

static constexpr StringLiteral kOperandNames[] = {"q", "k", "v", "gate", "out"};

int64_t FlashKernelConfig::rowStride(StringRef operand) const {
  auto *it = llvm::find(kOperandNames, operand);
  assert(it != std::end(kOperandNames) && "unknown operand");
  return rowStrides[std::distance(std::begin(kOperandNames), it)];
}

int64_t FlashKernelConfig::sharedMemoryBytes() const {
  if (isMerge())
    return 0;
  if (isWgmma())
    return TmaSharedLayout::get(*this).total;
  return queryTileBytes() + 2 * keyTileBytes() + 2 * valueTileBytes();
}

std::string FlashKernelConfig::typeName() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << elementType;
  return s;
}

std::string FlashKernelConfig::baseName() const {
  return llvm::formatv("gated_attention{0}_{1}_h{2}x{3}_d{4}{5}{6}{7}",
                       isPaged() ? "_paged" + std::to_string(pageSize) : "",
                       typeName(), numQueryHeads, numKeyValueHeads, headDim,
                       causal ? "_causal" : "",
                       !hasGate         ? "_nogate"
                       : gateWidth == 1 ? "_headwise"
                                        : "",
                       isWgmma()   ? "_sm90a"
                       : isSplit() ? "_split"
                       : isMerge() ? "_merge"
                                   : "")
      .str();
}

std::string FlashKernelConfig::uniqueKey() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << elementType << ' ' << numQueryHeads << ' ' << numKeyValueHeads << ' '
     << numGateHeads << ' ' << gateWidth << ' ' << headDim << ' '
     << valueHeadDim << ' ' << causal << ' ' << llvm::format("%a", scale) << ' '
     << gate << ' ' << stringifyCombineKind(combine) << ' ' << warps << ' '
     << keyBlock << ' ' << hasGate << (isWgmma() ? " wgmma" : "") << " rows "
     << llvm::interleaved(rowStrides, ",");
  if (isPaged())
    os << " paged " << pageSize;
  if (singleQuery)
    os << " sq1";
  if (role != KernelRole::Direct)
    os << " role " << static_cast<int>(role);
  return s;
}

SmallVector<SmallVector<StringRef, 2>> FlashKernelConfig::strideGroups() const {
  // The merge kernel's gate and output are packed [T, H, W] rows.
  if (isPaged() || isMerge())
    return {};
  if (isWgmma())
    return {{"gate"}, {"out"}};
  if (headDim == valueHeadDim)
    return {{"q"}, {"k", "v"}, {"gate"}, {"out"}};
  return {{"q"}, {"k"}, {"v"}, {"gate"}, {"out"}};
}

bool FlashKernelConfig::isStrided(StringRef operand) const {
  return llvm::any_of(strideGroups(), [&](ArrayRef<StringRef> group) {
    return llvm::is_contained(group, operand);
  });
}

/// The bytes that the start of each row of `operand` must be aligned to: Q,
/// K and V rows are copied in 16-byte cp.async chunks; the gate and the
/// output are read and written in pairs of elements (a headwise gate one at
/// a time).
static int64_t rowAlignment(const FlashKernelConfig &cfg, StringRef operand) {
  if (operand == "gate")
    return cfg.gateWidth == 1 ? cfg.elementBytes() : 2 * cfg.elementBytes();
  if (operand == "out")
    return 2 * cfg.elementBytes();
  return 16;
}

std::string FlashKernelConfig::describeLaunch(StringRef name) const {
  llvm::json::Array args;
  auto buffer = [&](StringRef name, StringRef shape) {
    llvm::json::Object arg{{"name", name},
                           {"kind", "memref"},
                           {"element_type", typeName()},
                           {"shape", shape}};
    if (isStrided(name) || isPaged() || isMerge()) {
      arg["row_stride"] = rowStride(name);
      arg["row_alignment"] = rowAlignment(*this, name);
    }
    args.push_back(std::move(arg));
  };
  // The wgmma kernel reads Q, K and V through TMA maps (pointers to them in
  // global memory): 3-D, (width, S, B x H) innermost first, boxes one
  // 128-byte swizzle span wide.
  auto map = [&](StringRef name, StringRef shape, StringRef width,
                 StringRef length, StringRef heads, int64_t rows) {
    args.push_back(llvm::json::Object{
        {"name", name},
        {"kind", "tensor_map"},
        {"element_type", typeName()},
        {"shape", shape},
        {"dims", llvm::json::Array{width, length, ("B*" + heads).str()}},
        {"box", llvm::json::Array{kSwizzleSpanElements, rows, 1}},
        {"swizzle", "128B"},
        {"oob_fill", "zero"}});
  };
  // The f32 partials of split-KV: O rows are written as 8-byte pairs.
  auto partials = [&] {
    args.push_back(llvm::json::Object{{"name", "o_partial"},
                                      {"kind", "memref"},
                                      {"element_type", "f32"},
                                      {"shape", "splits x T x Hq x Dv"},
                                      {"row_alignment", 8}});
    args.push_back(llvm::json::Object{{"name", "lse_partial"},
                                      {"kind", "memref"},
                                      {"element_type", "f32"},
                                      {"shape", "splits x T x Hq"}});
  };
  auto indices = [&](ArrayRef<StringRef> names) {
    for (StringRef name : names)
      args.push_back(llvm::json::Object{{"name", name}, {"kind", "index"}});
  };
  llvm::json::Array grid;
  if (isMerge()) {
    // One CTA per (token, head) row, a thread per column pair.
    buffer("gate", gateWidth == 1 ? "T x Hg x 1" : "T x Hg x Dv");
    buffer("out", "T x Hq x Dv");
    partials();
    indices({"T", "splits"});
    grid =
        llvm::json::Array{llvm::json::Array{"T", 1}, llvm::json::Array{"Hq", 1},
                          llvm::json::Array{"one", 1}};
  } else if (isPaged()) {
    // Packed rows of T tokens, caches of pages; the grid's x covers every
    // sequence's query blocks (TileScheduler.h: scheduleVarlenTile), its z
    // the splits of the keys.
    buffer("q", "T x Hq x D");
    buffer("k", "NB x P x Hkv x D");
    buffer("v", "NB x P x Hkv x Dv");
    buffer("gate", gateWidth == 1 ? "T x Hg x 1" : "T x Hg x Dv");
    buffer("out", "T x Hq x Dv");
    for (auto [name, shape] :
         {std::pair{"block_table", "B x MB"}, std::pair{"seq_lens", "B"},
          std::pair{"cu_seqlens_q", "B + 1"}})
      args.push_back(llvm::json::Object{{"name", name},
                                        {"kind", "memref"},
                                        {"element_type", "i32"},
                                        {"shape", shape}});
    indices({"B", "MB"});
    if (isSplit()) {
      partials();
      indices({"splits", "T"});
    }
    grid =
        llvm::json::Array{llvm::json::Array{"T", queriesPerBlock(), "B"},
                          llvm::json::Array{"Hq", rowGroup()},
                          llvm::json::Array{isSplit() ? "splits" : "one", 1}};
  } else {
    if (isWgmma()) {
      map("q", "B x Hq x Sq x D", "D", "Sq", "Hq", queryBlock());
      map("k", "B x Hkv x Skv x D", "D", "Skv", "Hkv", keyBlock);
      map("v", "B x Hkv x Skv x Dv", "Dv", "Skv", "Hkv", keyBlock);
    } else {
      buffer("q", "B x Hq x Sq x D");
      buffer("k", "B x Hkv x Skv x D");
      buffer("v", "B x Hkv x Skv x Dv");
    }
    buffer("gate", gateWidth == 1 ? "B x Hg x Sq x 1" : "B x Hg x Sq x Dv");
    buffer("out", "B x Hq x Sq x Dv");
    args.push_back(llvm::json::Object{{"name", "Sq"}, {"kind", "index"}});
    args.push_back(llvm::json::Object{{"name", "Skv"}, {"kind", "index"}});
    // (A dense decode step's split kernel: Sq = 1, one CTA per (split,
    // packed heads, batch).)
    grid = llvm::json::Array{isSplit() ? llvm::json::Array{"splits", 1}
                                       : llvm::json::Array{"Sq", queryBlock()},
                             llvm::json::Array{"Hq", rowGroup()},
                             llvm::json::Array{"B", 1}};
  }
  for (ArrayRef<StringRef> group : strideGroups()) {
    for (StringRef dim : {"B", "H"}) {
      llvm::json::Array of;
      for (StringRef name : group)
        of.push_back(name);
      llvm::json::Object arg;
      arg["name"] = llvm::join(group, "+") + "." + dim.str();
      arg["kind"] = "stride";
      arg["of"] = std::move(of);
      arg["dim"] = dim;
      args.push_back(std::move(arg));
    }
  }
  if (isSplit() && !isPaged()) {
    partials();
    indices({"splits", "T"});
  }
  // Version 4 of the schema that python/gated_attention/launch.py reads
  // (and documents): a change of meaning bumps the version.
  llvm::json::Object desc{
      {"schema", "gated-attention.launch"},
      {"version", 4},
      {"instructions", isMerge()   ? "simt"
                       : isWgmma() ? "wgmma"
                                   : "mma.sync"},
      {"layout", isMerge()   ? "split-merge"
                 : isSplit() ? (isPaged() ? "paged-split" : "dense-split")
                 : isPaged() ? "paged"
                             : "dense"},
      {"page_size", pageSize},
      {"module", name},
      {"kernel", name},
      {"element_type", typeName()},
      {"Hq", numQueryHeads},
      {"Hkv", numKeyValueHeads},
      {"Hg", numGateHeads},
      {"D", headDim},
      {"Dv", valueHeadDim},
      {"gate_width", gateWidth},
      {"causal", causal},
      {"gated", hasGate},
      {"rows_per_block", queryBlock()},
      {"row_group", rowGroup()},
      {"key_block", keyBlock},
      // Each grid dimension is ceildiv(symbol, divisor) (+ a third
      // symbol, where given).
      {"grid", std::move(grid)},
      {"block", llvm::json::Array{threads(), 1, 1}},
      {"dynamic_shared_memory", sharedMemoryBytes()},
      // A memref<?xT> argument is five kernel parameters (MLIR's default
      // memref calling convention), an index or stride argument one i64.
      {"abi",
       llvm::json::Object{
           {"memref", llvm::json::Array{"allocated", "aligned", "offset",
                                        "size", "stride"}},
           {"index", "i64"},
           {"tensor_map", "pointer"},
           {"alignment", 16}}},
      {"arguments", std::move(args)}};
  // The rule the MLIR host code picks the splits by (buildSplitCount), for
  // launchers that pick them alike.
  if (isSplit())
    desc["split_rule"] =
        llvm::json::Object{{"target_ctas", kSplitTargetCTAs},
                           {"min_keys_per_split", kMinKeysPerSplit},
                           {"max_splits", kMaxSplits}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(desc));
  return s;
}

/// `keyBlock`, or the next multiple of 16 at which each of the mma.sync
/// kernel's `warps` x 32 threads copies the same number of 16-byte chunks
/// of a K tile (D) and of a V tile (Dv): what tileError asks of tiles the
/// user chose, made to hold for the ones chosen here (D = 192: 24 chunks a
/// row).
static int64_t wholeCopies(int64_t warps, int64_t keyBlock, int64_t d,
                           int64_t dv) {
  auto divides = [&](int64_t width) {
    return (keyBlock * width / 8) % (32 * warps) == 0;
  };
  while (!divides(d) || !divides(dv))
    keyBlock += 16;
  return keyBlock;
}

/// The default tiles of a kernel of `kind` for head dims up to `d`.
/// The O accumulators take Dv / 2 registers per lane and the scores
/// key-block / 8: the choices keep ptxas within 255 registers and without
/// spills for D = 64, 128 and 256 on sm_80 and sm_90 (checked by
/// test/Pipelines/ptxas.test).
static std::pair<int64_t, int64_t> defaultTiles(FlashKernelKind kind, int64_t d,
                                                bool causal, bool paged) {
  if (kind == FlashKernelKind::Wgmma) {
    // FlashAttention-3's tiles: two consumer warpgroups (128 query rows);
    // 176 keys at D = 128 and 80 at D = 256, smaller when causal (less
    // work above the diagonal wasted, and the mask's registers). Each
    // thread's S takes key-block / 2 registers, P key-block / 4 and O
    // Dv / 2: the consumers' 240 hold them without spills
    // (test/Pipelines/ptxas-wgmma.test checks; causal D = 256 spills at 80).
    // Reading pages row by row (copiesRows): 128 keys at D = 128, as
    // FlashAttention-3's cp.async path (the copies take issue slots a
    // longer block would not hide); at D = 256 one consumer warpgroup of
    // 256 registers and 64 keys (the packed rows' index math spills two
    // consumers of 240; test/Pipelines/ptxas-paged.test checks).
    if (paged && d > 128)
      return {4, 64};
    int64_t keyBlock = d <= 64    ? 128
                       : d <= 128 ? (causal || paged ? 128 : 176)
                                  : (causal ? 64 : 80);
    return {8, keyBlock};
  }
  // The paged kernel carries its sequence's table and lengths through the
  // loop: at D = 256 that leaves registers for 16-key blocks only (32 spill
  // on sm_80 with 528-token pages; test/Pipelines/ptxas.test checks).
  return {d <= 128 ? 4 : 8, d <= 64 ? 128 : d <= 128 ? 64 : (paged ? 16 : 32)};
}

std::pair<int64_t, int64_t> flash::chooseTiles(Operation *op,
                                               FlashKernelKind kind,
                                               int64_t warps,
                                               int64_t keyBlock) {
  FlashKernelConfig shape = FlashKernelConfig::get(op, kind);
  auto [defaultWarps, defaultKeyBlock] =
      defaultTiles(kind, std::max(shape.headDim, shape.valueHeadDim),
                   shape.causal, shape.isPaged());
  if (!warps)
    warps = defaultWarps;
  if (!keyBlock) {
    keyBlock = defaultKeyBlock;
    if (kind == FlashKernelKind::MmaSync && warps > 0 && warps <= kMaxWarps)
      keyBlock =
          wholeCopies(warps, keyBlock, shape.headDim, shape.valueHeadDim);
  }
  return {warps, keyBlock};
}

FlashKernelConfig FlashKernelConfig::withRole(KernelRole role) const {
  FlashKernelConfig cfg = *this;
  cfg.role = role;
  if (role != KernelRole::Direct && isWgmma()) {
    cfg.kind = FlashKernelKind::MmaSync;
    std::tie(cfg.warps, cfg.keyBlock) = defaultTiles(
        cfg.kind, std::max(headDim, valueHeadDim), causal, isPaged());
  }
  if (role == KernelRole::Split && std::max(headDim, valueHeadDim) > 128)
    cfg.keyBlock = wholeCopies(cfg.warps, std::min<int64_t>(cfg.keyBlock, 16),
                               headDim, valueHeadDim);
  return cfg;
}

/// (The op's verifier already guarantees one element type and static head
/// counts and dims.)
std::string flash::unsupportedReason(Operation *op, FlashKernelKind kind) {
  FlashKernelConfig shape = FlashKernelConfig::get(op, kind);
  Type t = shape.elementType;
  if (!t.isF16() && !t.isBF16())
    return "element type is not f16 or bf16";
  int64_t d = shape.headDim, dv = shape.valueHeadDim;
  if (d % 16 || dv % 16 || d > 256 || dv > 256)
    return "head dims must be multiples of 16 up to 256";
  // TMA boxes are one 128-byte swizzle span wide.
  if (kind == FlashKernelKind::Wgmma &&
      (d % kSwizzleSpanElements || dv % kSwizzleSpanElements))
    return "the sm_90a kernel needs head dims that are multiples of 64";
  return "";
}

std::string flash::tileError(Operation *op, FlashKernelKind kind, int64_t warps,
                             int64_t keyBlock, int64_t maxSharedMemory) {
  if (kind == FlashKernelKind::Wgmma) {
    if (warps != 4 && warps != 8)
      return llvm::formatv("the sm_90a kernel runs one or two consumer "
                           "warpgroups: warps must be 4 or 8 (or 0), got {0}",
                           warps);
    // The N of the S = Q K^T wgmma, and a TMA box dimension: at most 256.
    if (keyBlock <= 0 || keyBlock % 16 || keyBlock > 256)
      return llvm::formatv("key-block must be a multiple of 16 in [16, 256] "
                           "for the sm_90a kernel, got {0}",
                           keyBlock);
    FlashKernelConfig cfg = FlashKernelConfig::get(op, kind, warps, keyBlock);
    if (cfg.sharedMemoryBytes() > maxSharedMemory)
      return llvm::formatv(
          "the kernel's tiles need {0} bytes of shared memory, more than "
          "the {1} a CTA may use on this chip; use a smaller key-block",
          cfg.sharedMemoryBytes(), maxSharedMemory);
    return "";
  }
  // 255 registers per thread (what the kernel takes at D = 256) times the
  // threads of 8 warps is the 64K-register file of an SM.
  if (warps < 1 || warps > kMaxWarps)
    return llvm::formatv("warps must be in [1, {0}], got {1}", kMaxWarps,
                         warps);
  if (keyBlock <= 0 || keyBlock % 16 || keyBlock > kMaxKeyBlock)
    return llvm::formatv(
        "key-block must be a multiple of 16 in [16, {0}], got {1}",
        kMaxKeyBlock, keyBlock);
  FlashKernelConfig cfg = FlashKernelConfig::get(op, kind, warps, keyBlock);
  // Every thread copies the same number of 16-byte chunks of a K/V tile.
  for (int64_t width : {cfg.headDim, cfg.valueHeadDim})
    if ((keyBlock * width / 8) % cfg.threads())
      return llvm::formatv("key-block x head dim / 8 ({0} x {1} / 8) must be "
                           "a multiple of the {2} threads",
                           keyBlock, width, cfg.threads());
  if (cfg.sharedMemoryBytes() > maxSharedMemory)
    return llvm::formatv("the kernel's tiles need {0} bytes of shared memory, "
                         "more than the {1} a CTA may use on this chip; use "
                         "fewer warps or a smaller key-block",
                         cfg.sharedMemoryBytes(), maxSharedMemory);
  return "";
}

std::string flash::layoutError(Operation *op, FlashKernelKind kind) {
  FlashKernelConfig cfg = FlashKernelConfig::get(op, kind);
  for (auto [name, stride] : llvm::zip_equal(kOperandNames, cfg.rowStrides)) {
    // (The paged kernel's rows are packed tokens of several heads.)
    bool strided = cfg.isStrided(name) || cfg.isPaged();
    int64_t width = name == "v" ? cfg.valueHeadDim : cfg.headDim;
    if (!strided && stride != width)
      return llvm::formatv("kernel=wgmma reads {0} through a TMA map of a "
                           "[B, H, S, D] buffer: its row stride must be {1}, "
                           "got {2}",
                           name, width, stride);
    int64_t align = rowAlignment(cfg, name);
    if (strided && (stride * cfg.elementBytes()) % align)
      return llvm::formatv("the {0} row stride {1} must be a multiple of {2} "
                           "elements ({3}-byte aligned rows)",
                           name, stride, align / cfg.elementBytes(), align);
  }
  // K and V share their batch and head strides (strideGroups): with rows of
  // one width their layouts are one.
  if (!cfg.isWgmma() && !cfg.isPaged() && cfg.headDim == cfg.valueHeadDim &&
      cfg.rowStride("k") != cfg.rowStride("v"))
    return llvm::formatv("key and value share their batch and head strides "
                         "(D = Dv): their row strides must agree, got {0} "
                         "and {1}",
                         cfg.rowStride("k"), cfg.rowStride("v"));
  return "";
}
