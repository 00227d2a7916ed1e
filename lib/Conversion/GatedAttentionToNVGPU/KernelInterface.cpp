//===- KernelInterface.cpp - what a kernel and its callers agree on -------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "KernelInterface.h"
#include "BackwardKernels.h"
#include "SharedMemoryLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

Type KernelArgument::getType(MLIRContext *ctx) const {
  switch (kind) {
  case ArgumentKind::Buffer:
    return MemRefType::get({ShapedType::kDynamic}, elementType);
  case ArgumentKind::TensorMap:
    return LLVM::LLVMPointerType::get(ctx);
  case ArgumentKind::Index:
  case ArgumentKind::Stride:
    return IndexType::get(ctx);
  }
  llvm_unreachable("unknown argument kind");
}

namespace {
/// Appends a kernel's arguments in parameter order.
struct ArgumentList {
  const FlashKernelConfig &cfg;
  std::vector<KernelArgument> &args;

  /// A buffer of the op's element type; one whose rows the kernel reads
  /// at a compiled-in stride (strided, paged or merged) carries it.
  void buffer(StringRef name, StringRef shape) {
    KernelArgument arg{name.str(), ArgumentKind::Buffer, cfg.elementType,
                       shape.str()};
    if (cfg.isStrided(name) || cfg.isPaged() || cfg.isMerge()) {
      arg.rowStride = cfg.rowStride(name);
      arg.rowAlignment = cfg.rowAlignment(name);
    }
    args.push_back(std::move(arg));
  }
  void i32Buffer(StringRef name, StringRef shape) {
    args.push_back({name.str(), ArgumentKind::Buffer,
                    IntegerType::get(cfg.elementType.getContext(), 32),
                    shape.str()});
  }
  /// A TMA map of a [B, H, S, width] operand viewed as (width, S, B x H).
  void map(StringRef name, StringRef shape, StringRef width, StringRef length,
           StringRef heads, int64_t rows) {
    KernelArgument arg{name.str(), ArgumentKind::TensorMap, cfg.elementType,
                       shape.str()};
    arg.dims = {width.str(), length.str(), ("B*" + heads).str()};
    arg.boxRows = rows;
    args.push_back(std::move(arg));
  }
  void indices(ArrayRef<StringRef> names) {
    for (StringRef name : names)
      args.push_back({name.str(), ArgumentKind::Index});
  }
  /// The (batch, head) strides of each group of strided buffers.
  void strides() {
    for (ArrayRef<StringRef> group : cfg.strideGroups()) {
      for (StringRef dim : {"B", "H"}) {
        KernelArgument arg{llvm::join(group, "+") + "." + dim.str(),
                           ArgumentKind::Stride};
        for (StringRef name : group)
          arg.of.push_back(name.str());
        arg.dim = dim.str();
        args.push_back(std::move(arg));
      }
    }
  }
  /// The f32 partials of split-KV ([splits, T, Hq, Dv] and [splits, T,
  /// Hq]; O rows are written as 8-byte pairs), then splits and T.
  void partials() {
    Type f32 = Float32Type::get(cfg.elementType.getContext());
    KernelArgument out{"o_partial", ArgumentKind::Buffer, f32,
                       "splits x T x Hq x Dv"};
    out.rowAlignment = 8;
    args.push_back(std::move(out));
    args.push_back(
        {"lse_partial", ArgumentKind::Buffer, f32, "splits x T x Hq"});
  }
  /// An f32 buffer of one value per query row (the forward's and the
  /// backward's L, the backward's D), [B, Hq, Sq]-contiguous.
  void rowBuffer(StringRef name, StringRef shape = "B x Hq x Sq") {
    args.push_back({name.str(), ArgumentKind::Buffer,
                    Float32Type::get(cfg.elementType.getContext()),
                    shape.str()});
  }
  StringRef gateShape(bool dense) const {
    if (dense)
      return cfg.gateWidth == 1 ? "B x Hg x Sq x 1" : "B x Hg x Sq x Dv";
    return cfg.gateWidth == 1 ? "T x Hg x 1" : "T x Hg x Dv";
  }
};
} // namespace

/// The backward's kernels (BackwardKernels.h) on [B, H, S, W]-contiguous
/// buffers: "do" is dY = dOut * act(G) (the preprocessing's output, or
/// dOut itself without a gate), "lse" the forward's L and "delta" D, both
/// f32 per query row.
static void getBackward(const FlashKernelConfig &cfg, ArgumentList &list,
                        std::array<GridDimension, 3> &grid) {
  int64_t rows = cfg.queryBlock();
  if (cfg.role == KernelRole::BackwardPreprocess) {
    // A CTA per PreprocessLanes::rowsPerBlock rows of one gate head (one
    // query head without a gate): a row's lanes sum the gate's gradient
    // over the heads that share the gate.
    list.buffer("out", "B x Hq x Sq x Dv");
    list.buffer("dout", "B x Hq x Sq x Dv");
    list.buffer("gate", list.gateShape(/*dense=*/true));
    list.buffer("do", "B x Hq x Sq x Dv");
    list.buffer("dg", list.gateShape(/*dense=*/true));
    list.rowBuffer("delta");
    list.indices({"Sq"});
    PreprocessLanes lanes(cfg);
    grid = {GridDimension{"Sq", lanes.rowsPerBlock},
            GridDimension{"Hq", lanes.headsPerBlock}, GridDimension{"B"}};
    return;
  }
  list.buffer("q", "B x Hq x Sq x D");
  if (cfg.isWgmma()) {
    // The wgmma kernels copy K and V by TMA: the dK/dV kernel's resident
    // tiles of `rows` keys, the dQ kernel's streamed key blocks (Q and dY
    // stay row copies: BackwardWgmmaKernel.h).
    int64_t keys =
        cfg.role == KernelRole::BackwardKeyValue ? rows : cfg.keyBlock;
    list.map("k", "B x Hkv x Skv x D", "D", "Skv", "Hkv", keys);
    list.map("v", "B x Hkv x Skv x Dv", "Dv", "Skv", "Hkv", keys);
  } else {
    list.buffer("k", "B x Hkv x Skv x D");
    list.buffer("v", "B x Hkv x Skv x Dv");
  }
  list.buffer("do", "B x Hq x Sq x Dv");
  list.rowBuffer("lse");
  list.rowBuffer("delta");
  if (cfg.role == KernelRole::BackwardKeyValue) {
    list.buffer("dk", "B x Hkv x Skv x D");
    list.buffer("dv", "B x Hkv x Skv x Dv");
    list.indices({"Sq", "Skv"});
    grid = {GridDimension{"Skv", rows}, GridDimension{"Hq", cfg.groupSize()},
            GridDimension{"B"}};
    return;
  }
  list.buffer("dq", "B x Hq x Sq x D");
  list.indices({"Sq", "Skv"});
  grid = {GridDimension{"Sq", rows}, GridDimension{"Hq"}, GridDimension{"B"}};
}

KernelInterface KernelInterface::get(const FlashKernelConfig &cfg) {
  KernelInterface iface(cfg);
  ArgumentList list{cfg, iface.arguments};
  if (cfg.isBackward()) {
    getBackward(cfg, list, iface.grid);
    return iface;
  }
  if (cfg.isMerge()) {
    // One CTA per (token, head) row, a thread per column pair.
    list.buffer("gate", list.gateShape(/*dense=*/false));
    list.buffer("out", "T x Hq x Dv");
    if (cfg.lse)
      list.rowBuffer("lse", "T x Hq");
    list.partials();
    list.indices({"T", "splits"});
    iface.grid = {GridDimension{"T"}, GridDimension{"Hq"},
                  GridDimension{"one"}};
    return iface;
  }
  if (cfg.isPaged()) {
    // Packed rows of T tokens, caches of pages; the grid's x covers every
    // sequence's query blocks (TileScheduler.h: scheduleVarlenTile), its z
    // the splits of the keys.
    list.buffer("q", "T x Hq x D");
    list.buffer("k", "NB x P x Hkv x D");
    list.buffer("v", "NB x P x Hkv x Dv");
    list.buffer("gate", list.gateShape(/*dense=*/false));
    list.buffer("out", "T x Hq x Dv");
    list.i32Buffer("block_table", "B x MB");
    list.i32Buffer("seq_lens", "B");
    list.i32Buffer("cu_seqlens_q", "B + 1");
    list.indices({"B", "MB"});
    if (cfg.isSplit()) {
      list.partials();
      list.indices({"splits", "T"});
    }
    iface.grid = {GridDimension{"T", cfg.queriesPerBlock(), "B"},
                  GridDimension{"Hq", cfg.rowGroup()},
                  GridDimension{cfg.isSplit() ? "splits" : "one"}};
    return iface;
  }
  if (cfg.isWgmma()) {
    list.map("q", "B x Hq x Sq x D", "D", "Sq", "Hq", cfg.queryBlock());
    list.map("k", "B x Hkv x Skv x D", "D", "Skv", "Hkv", cfg.keyBlock);
    list.map("v", "B x Hkv x Skv x Dv", "Dv", "Skv", "Hkv", cfg.keyBlock);
  } else {
    list.buffer("q", "B x Hq x Sq x D");
    list.buffer("k", "B x Hkv x Skv x D");
    list.buffer("v", "B x Hkv x Skv x Dv");
  }
  list.buffer("gate", list.gateShape(/*dense=*/true));
  list.buffer("out", "B x Hq x Sq x Dv");
  // Only where the op returns it: other kernels keep their parameters.
  if (cfg.lse)
    list.rowBuffer("lse");
  list.indices({"Sq", "Skv"});
  // The persistent kernel counts its tiles itself: B x Hq x its query
  // blocks (TileScheduler.h: TileSequence).
  if (iface.persistent())
    list.indices({"B"});
  list.strides();
  // A dense decode step's split kernel (Sq = 1): one CTA per (split,
  // packed heads, batch).
  if (cfg.isSplit()) {
    list.partials();
    list.indices({"splits", "T"});
  }
  iface.grid = {cfg.isSplit() ? GridDimension{"splits"}
                              : GridDimension{"Sq", cfg.queryBlock()},
                GridDimension{"Hq", cfg.rowGroup()}, GridDimension{"B"}};
  return iface;
}

unsigned KernelInterface::position(StringRef name) const {
  auto it = llvm::find_if(
      arguments, [&](const KernelArgument &arg) { return arg.name == name; });
  if (it == arguments.end())
    llvm::report_fatal_error("flash kernel " + Twine(cfg.baseName()) +
                             " has no argument '" + name + "'");
  return std::distance(arguments.begin(), it);
}

const KernelArgument &KernelInterface::lookup(StringRef name) const {
  return arguments[position(name)];
}

FunctionType KernelInterface::getFunctionType(MLIRContext *ctx) const {
  auto types = llvm::map_to_vector(
      arguments, [&](const KernelArgument &arg) { return arg.getType(ctx); });
  return FunctionType::get(ctx, types, {});
}

int64_t KernelInterface::sharedMemoryBytes() const {
  return flash::sharedMemoryBytes(cfg);
}

StringRef KernelInterface::instructions() const {
  if (cfg.isMerge() || cfg.role == KernelRole::BackwardPreprocess)
    return "simt";
  return cfg.isWgmma() ? "wgmma" : "mma.sync";
}

StringRef KernelInterface::layout() const {
  switch (cfg.role) {
  case KernelRole::BackwardPreprocess:
    return "backward-preprocess";
  case KernelRole::BackwardKeyValue:
    return "backward-kv";
  case KernelRole::BackwardQuery:
    return "backward-q";
  default:
    break;
  }
  if (cfg.isMerge())
    return "split-merge";
  if (cfg.isSplit())
    return cfg.isPaged() ? "paged-split" : "dense-split";
  return cfg.isPaged() ? "paged" : "dense";
}

SmallVector<Value>
KernelInterface::launchOperands(const llvm::StringMap<Value> &named) const {
  return llvm::map_to_vector(arguments, [&](const KernelArgument &arg) {
    std::string key = arg.kind == ArgumentKind::Stride
                          ? arg.of.front() + "." + arg.dim
                          : arg.name;
    Value value = named.lookup(key);
    if (!value)
      llvm::report_fatal_error("no launch value for argument '" + Twine(key) +
                               "' of flash kernel " + cfg.baseName());
    return value;
  });
}

gpu::KernelDim3
KernelInterface::buildGrid(OpBuilder &b, Location loc,
                           const llvm::StringMap<Value> &symbols,
                           int64_t smCount) const {
  auto constant = [&](StringRef symbol) -> std::optional<int64_t> {
    if (symbol == "Hq")
      return cfg.numQueryHeads;
    if (symbol == "one")
      return 1;
    return std::nullopt;
  };
  auto size = [&](StringRef symbol) {
    Value value = symbols.lookup(symbol);
    if (!value)
      llvm::report_fatal_error("no launch value for grid symbol '" + symbol +
                               "' of flash kernel " + cfg.baseName());
    return value;
  };
  auto dimension = [&](const GridDimension &dim) -> Value {
    if (std::optional<int64_t> n = constant(dim.symbol)) {
      assert(dim.addend.empty() && "a constant dimension has no addend");
      return arith::ConstantIndexOp::create(b, loc,
                                            llvm::divideCeil(*n, dim.divisor));
    }
    Value x = size(dim.symbol);
    if (dim.divisor != 1)
      x = arith::CeilDivUIOp::create(
          b, loc, x, arith::ConstantIndexOp::create(b, loc, dim.divisor));
    if (!dim.addend.empty())
      x = arith::AddIOp::create(b, loc, x, size(dim.addend));
    return x;
  };
  // (Separate statements: one order of the ops for every compiler.)
  Value x = dimension(grid[0]);
  Value y = dimension(grid[1]);
  Value z = dimension(grid[2]);
  if (!persistent() || smCount <= 0)
    return {x, y, z};
  // As many CTAs as the device holds at once, along x, when the tiles are
  // more: each loops over its share.
  Value tiles =
      arith::MulIOp::create(b, loc, arith::MulIOp::create(b, loc, x, y), z);
  Value resident =
      arith::ConstantIndexOp::create(b, loc, smCount * ctasPerSM());
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  return {arith::MinUIOp::create(b, loc, tiles, resident), one, one};
}

bool KernelInterface::persistent() const {
  return cfg.persistent && cfg.isWgmma() && cfg.role == KernelRole::Direct &&
         !cfg.isPaged();
}

int64_t KernelInterface::ctasPerSM() const {
  // sm_90's 64K registers and 228 KiB of shared memory per SM, 1 KiB of it
  // reserved per CTA. The wgmma kernels take all the registers
  // (FlashKernelConfig::registersFit: the entry count is the file split over
  // one CTA's threads, which setmaxnreg redistributes), so one CTA per SM
  // whatever their shared memory.
  int64_t entry = std::min<int64_t>(255, 65536 / threads() / 8 * 8);
  int64_t byRegisters = 65536 / (threads() * entry);
  int64_t bySharedMemory = (228 * 1024) / (sharedMemoryBytes() + 1024);
  return std::max<int64_t>(1, std::min(byRegisters, bySharedMemory));
}

OperandStrides KernelArguments::strides(const KernelBuilder &kb,
                                        StringRef operand) const {
  Value batch, head;
  for (auto [i, arg] : llvm::enumerate(interface.getArguments())) {
    if (arg.kind != ArgumentKind::Stride ||
        !llvm::is_contained(arg.of, operand))
      continue;
    (arg.dim == "B" ? batch : head) = entry->getArgument(i);
  }
  if (!batch || !head)
    llvm::report_fatal_error("operand '" + operand +
                             "' has no stride arguments in flash kernel " +
                             interface.getConfig().baseName());
  return OperandStrides{batch, head,
                        kb.idx(interface.getConfig().rowStride(operand))};
}
