//===- FlashKernelConfig.cpp - what a flash kernel depends on -------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "FlashKernelConfig.h"
#include "KernelTiles.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
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
  cfg.lse = dense.hasLse();
  return cfg;
}

int64_t FlashKernelConfig::rowStride(StringRef operand) const {
  auto *it = llvm::find(kOperandNames, operand);
  assert(it != std::end(kOperandNames) && "unknown operand");
  return rowStrides[std::distance(std::begin(kOperandNames), it)];
}

std::string FlashKernelConfig::typeName() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << elementType;
  return s;
}

std::string FlashKernelConfig::baseName() const {
  return llvm::formatv(
             "gated_attention{0}_{1}_h{2}x{3}_d{4}{5}{6}{7}",
             isPaged() ? "_paged" + std::to_string(pageSize) : "", typeName(),
             numQueryHeads, numKeyValueHeads, headDim, causal ? "_causal" : "",
             !hasGate         ? "_nogate"
             : gateWidth == 1 ? "_headwise"
                              : "",
             std::string(isSplit()                                ? "_split"
                         : isMerge()                              ? "_merge"
                         : role == KernelRole::BackwardPreprocess ? "_bwd_pre"
                         : role == KernelRole::BackwardKeyValue   ? "_bwd_kv"
                         : role == KernelRole::BackwardQuery      ? "_bwd_q"
                                                                  : "") +
                 (isWgmma() ? "_sm90a" : ""))
             .str() +
         (lse ? "_lse" : "") + (persistent ? "_persistent" : "");
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
  if (lse)
    os << " lse";
  if (persistent)
    os << " persistent";
  if (role != KernelRole::Direct)
    os << " role " << static_cast<int>(role);
  if (columnSplit != 1)
    os << " columns " << columnSplit;
  return s;
}

SmallVector<SmallVector<StringRef, 2>> FlashKernelConfig::strideGroups() const {
  // The merge kernel's gate and output are packed [T, H, W] rows; the
  // backward's buffers are [B, H, S, W]-contiguous.
  if (isPaged() || isMerge() || isBackward())
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
int64_t FlashKernelConfig::rowAlignment(StringRef operand) const {
  if (operand == "gate")
    return stagesGate()     ? 16
           : gateWidth == 1 ? elementBytes()
                            : 2 * elementBytes();
  if (operand == "out")
    return stagesOutput() ? 16 : 2 * elementBytes();
  return 16;
}

bool FlashKernelConfig::stagesOutput() const {
  // One bulk copy a warp: its 16 rows back to back in global memory, and
  // 16-byte aligned. Dv = 256 only: the staging's fixed cost (a barrier,
  // the copies and their waits, about 40 instructions a warp) beats the 4
  // stores (and loads) per 8 elements of a lane it saves only there; at
  // Dv = 128 the epilogue came out the same length and the main loop a
  // few instructions longer (bench/results/sass-2026-12-05.md).
  return isWgmma() && role == KernelRole::Direct && !isPaged() &&
         rowGroup() == 1 && valueHeadDim == 256 && headDim >= 256 &&
         rowStride("out") == valueHeadDim;
}

FlashKernelConfig FlashKernelConfig::withRole(KernelRole role) const {
  FlashKernelConfig cfg = *this;
  cfg.role = role;
  if (role != KernelRole::Direct)
    cfg.persistent = false;
  // The split kernel's partials carry their own LSE; the merge writes L.
  if (role == KernelRole::Split)
    cfg.lse = false;
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

FlashKernelConfig FlashKernelConfig::getBackward(AttentionBackwardOp op,
                                                 KernelRole role,
                                                 FlashKernelKind kind) {
  FlashKernelConfig cfg = getCommon(op, FlashKernelKind::MmaSync, 0, 0);
  cfg.role = role;
  cfg.numKeyValueHeads = op.getNumKVHeads();
  cfg.numGateHeads = op.hasGate() ? op.getGateType().getDimSize(1) : 1;
  cfg.gateWidth = op.hasGate() ? op.getGateType().getDimSize(3) : 1;
  cfg.rowStrides = {cfg.headDim, cfg.headDim, cfg.valueHeadDim, cfg.gateWidth,
                    cfg.valueHeadDim};
  // Four warps: 16 rows each of the CTA's 64 keys (dK/dV) or queries (dQ),
  // or 128 rows of the preprocessing. The streamed blocks (`keyBlock`:
  // queries for dK/dV, keys for dQ) shrink above D = 64: at D = 128 the dK
  // and dV accumulators take 128 registers a thread, and 32 streamed rows
  // spill (test/Pipelines/ptxas-backward.test).
  // Above D = 128 even that does not fit: two warps share each 16-row
  // tile, each accumulating half of the columns, 16-row blocks streamed.
  // The dK/dV kernel's pair computes S^T in one warp and dP^T in the other
  // and trades them through shared memory (each computing both spilled at
  // D 160 to 224); the dQ kernel's pair computes S and dP in each warp.
  cfg.warps = 4;
  int64_t width = std::max(cfg.headDim, cfg.valueHeadDim);
  bool wide = width > 64;
  if (role == KernelRole::BackwardKeyValue)
    cfg.keyBlock = wide ? 16 : 64;
  else if (role == KernelRole::BackwardQuery)
    cfg.keyBlock = wide ? 32 : 64;
  if (width > 128 && role != KernelRole::BackwardPreprocess) {
    cfg.columnSplit = 2;
    cfg.warps = 8;
    cfg.keyBlock = 16;
  }
  // The sm_90a dK/dV kernel (BackwardKeyValueWgmma.cpp): a consumer
  // warpgroup per m64 tile of keys, 64 query rows streamed (32 above
  // D = 64: at 64 S^T, dP^T and the rows' L and D spill next to 128 dK/dV
  // registers; test/Pipelines/ptxas-backward.test); above D = 128 two
  // consumer warpgroups split the tile's columns.
  if (kind == FlashKernelKind::Wgmma && role == KernelRole::BackwardKeyValue) {
    cfg.kind = kind;
    cfg.keyBlock = wide ? 32 : 64;
    cfg.columnSplit = width > 128 ? 2 : 1;
    cfg.warps = 4 * cfg.columnSplit;
  }
  // The sm_90a dQ kernel (BackwardQueryWgmma.cpp): one consumer warpgroup
  // per 64 query rows, its D / 2 dQ registers leaving room for S and dP of
  // 64 streamed keys (32 at D = 256).
  if (kind == FlashKernelKind::Wgmma && role == KernelRole::BackwardQuery) {
    cfg.kind = kind;
    cfg.keyBlock = width > 128 ? 32 : 64;
    cfg.columnSplit = 1;
    cfg.warps = 4;
  }
  return cfg;
}
