//===- KernelTiles.cpp - the flash kernels' tiles and their checks --------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "KernelTiles.h"
#include "SharedMemoryLayout.h"
#include "WgmmaAtom.h"

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

/// `keyBlock`, or the next multiple of 16 at which each of the mma.sync
/// kernel's `warps` x 32 threads copies the same number of 16-byte chunks
/// of a K tile (D) and of a V tile (Dv): what tileError asks of tiles the
/// user chose, made to hold for the ones chosen here (D = 192: 24 chunks a
/// row).
int64_t flash::wholeCopies(int64_t warps, int64_t keyBlock, int64_t d,
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
std::pair<int64_t, int64_t> flash::defaultTiles(FlashKernelKind kind, int64_t d,
                                                bool causal, bool paged) {
  if (kind == FlashKernelKind::Wgmma) {
    // FlashAttention-3's tiles: two consumer warpgroups (128 query rows);
    // 176 keys at D = 128 (128 when causal: less work above the diagonal
    // wasted, and the mask's registers) and 80 at D = 256. Each thread's S
    // takes key-block / 2 registers, P key-block / 4 and O Dv / 2: the
    // consumers' 240 hold them without spills
    // (test/Pipelines/ptxas-wgmma.test checks).
    // Reading pages row by row (copiesRows): 128 keys at D = 128, as
    // FlashAttention-3's cp.async path (the copies take issue slots a
    // longer block would not hide); at D = 256 one consumer warpgroup of
    // 256 registers and 64 keys (the packed rows' index math spills two
    // consumers of 240; test/Pipelines/ptxas-paged.test checks).
    if (paged && d > 128)
      return {4, 64};
    int64_t keyBlock = d <= 64    ? 128
                       : d <= 128 ? (causal || paged ? 128 : 176)
                                  : 80;
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

std::string flash::sizeLimitError(Operation *op) {
  // {name, size} of each row count, then of each grid dimension.
  SmallVector<std::pair<StringRef, int64_t>, 3> rows, grid;
  auto product = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) ? a : a * b;
  };
  if (auto paged = dyn_cast<PagedAttentionOp>(op)) {
    RankedTensorType table = paged.getBlockTable().getType();
    rows = {{"T x Hq / Hkv",
             product(paged.getQueryType().getDimSize(0),
                     paged.getNumQueryHeads() / paged.getNumKVHeads())},
            {"MB x P", product(table.getDimSize(1), paged.getPageSize())}};
    grid = {{"Hq", paged.getNumQueryHeads()}};
  } else {
    auto query = cast<RankedTensorType>(op->getOperand(0).getType());
    auto key = cast<RankedTensorType>(op->getOperand(1).getType());
    rows = {{"Sq", query.getDimSize(2)}, {"Skv", key.getDimSize(2)}};
    grid = {{"Hq", query.getDimSize(1)}, {"B", query.getDimSize(0)}};
  }
  for (auto [name, size] : rows)
    if (!ShapedType::isDynamic(size) && size >= kMaxRows)
      return llvm::formatv("{0} = {1} must be below 2^30 (the kernels index "
                           "rows in 32 bits)",
                           name, size);
  for (auto [name, size] : grid)
    if (!ShapedType::isDynamic(size) && size > kMaxGridYZ)
      return llvm::formatv("{0} = {1} must be at most {2} (CUDA's grid y and "
                           "z limit)",
                           name, size, kMaxGridYZ);
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
    if (sharedMemoryBytes(cfg) > maxSharedMemory)
      return llvm::formatv(
          "the kernel's tiles need {0} bytes of shared memory, more than "
          "the {1} a CTA may use on this chip; use a smaller key-block",
          sharedMemoryBytes(cfg), maxSharedMemory);
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
  if (sharedMemoryBytes(cfg) > maxSharedMemory)
    return llvm::formatv("the kernel's tiles need {0} bytes of shared memory, "
                         "more than the {1} a CTA may use on this chip; use "
                         "fewer warps or a smaller key-block",
                         sharedMemoryBytes(cfg), maxSharedMemory);
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
    int64_t align = cfg.rowAlignment(name);
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
