//===- SharedMemoryLayout.cpp - where the kernels' tiles are --------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "SharedMemoryLayout.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

CpAsyncSharedLayout CpAsyncSharedLayout::get(const FlashKernelConfig &cfg) {
  CpAsyncSharedLayout layout;
  layout.query = 0;
  layout.keys = cfg.queryTileBytes();
  layout.values = layout.keys + kStages * cfg.keyTileBytes();
  layout.exchange = layout.values + kStages * cfg.valueTileBytes();
  bool trades = cfg.role == KernelRole::BackwardKeyValue && cfg.columnSplit > 1;
  layout.total =
      layout.exchange + (trades ? cfg.warps * 16 * cfg.keyBlock * 4 : 0);
  return layout;
}

TmaSharedLayout TmaSharedLayout::get(const FlashKernelConfig &cfg) {
  TmaSharedLayout layout;
  // Every tile is a whole number of 1024-byte swizzle atoms (8 rows of 128
  // bytes), so each starts 1024-aligned.
  layout.query = 0;
  layout.keyStageBytes = cfg.keyTileBytes();
  layout.valueStageBytes = cfg.valueTileBytes();
  layout.keys = llvm::alignTo(cfg.queryTileBytes(), 1024);
  layout.values = layout.keys + kStages * layout.keyStageBytes;
  // full K, full V, empty K, empty V, kStages each; then Q's.
  layout.barriers = layout.values + kStages * layout.valueStageBytes;
  layout.queryBarrier = layout.barriers + 8 * 4 * kStages;
  layout.queryEmptyBarrier = layout.queryBarrier + 8;
  layout.gateBarriers = layout.queryEmptyBarrier + (cfg.persistent ? 8 : 0);
  layout.total = layout.gateBarriers + (cfg.stagesGate() ? 8 * cfg.warps : 0);
  return layout;
}

BackwardTmaLayout BackwardTmaLayout::get(const FlashKernelConfig &cfg) {
  // Tiles of whole 1024-byte swizzle atoms: each starts 1024-aligned.
  BackwardTmaLayout layout;
  int64_t rows = cfg.queryBlock();
  layout.resident[0] = 0;
  layout.resident[1] = rows * cfg.headDim * cfg.elementBytes();
  layout.streamedStageBytes[0] = cfg.keyTileBytes();
  layout.streamedStageBytes[1] = cfg.valueTileBytes();
  layout.streamed[0] =
      layout.resident[1] + rows * cfg.valueHeadDim * cfg.elementBytes();
  layout.streamed[1] =
      layout.streamed[0] + kStages * layout.streamedStageBytes[0];
  layout.barriers = layout.streamed[1] + kStages * layout.streamedStageBytes[1];
  layout.residentBarrier = layout.barriers + 8 * 2 * kStages;
  layout.total = layout.residentBarrier + 8;
  return layout;
}

int64_t flash::sharedMemoryBytes(const FlashKernelConfig &cfg) {
  if (cfg.isMerge() || cfg.role == KernelRole::BackwardPreprocess)
    return 0;
  if (cfg.isWgmma() && cfg.isBackward())
    return BackwardTmaLayout::get(cfg).total;
  if (cfg.isWgmma())
    return TmaSharedLayout::get(cfg).total;
  return CpAsyncSharedLayout::get(cfg).total;
}
