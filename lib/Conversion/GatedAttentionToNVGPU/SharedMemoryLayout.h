//===- SharedMemoryLayout.h - where the kernels' tiles are ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The byte offsets of the flash kernels' tiles in shared memory: the copy
// pipelines place their tiles there, and the kernel's interface asks for
// that many bytes at launch.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_SHARED_MEMORY_LAYOUT_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_SHARED_MEMORY_LAYOUT_H

#include "FlashKernelConfig.h"

namespace mlir::gated_attention::flash {

/// Byte offsets in the mma.sync kernel's shared memory (CpAsyncPipeline):
/// the Q tile, then the two stages of K, then the two of V.
struct CpAsyncSharedLayout {
  static constexpr int64_t kStages = 2;
  /// `exchange`: the backward dK/dV kernel's column split trades S^T and
  /// dP^T there, a 16 x keyBlock f32 tile a warp (empty otherwise).
  int64_t query, keys, values, exchange, total;
  static CpAsyncSharedLayout get(const FlashKernelConfig &cfg);
};

/// Byte offsets in the wgmma kernel's shared memory.
struct TmaSharedLayout {
  static constexpr int64_t kStages = 2;
  int64_t query, keys, values, keyStageBytes, valueStageBytes;
  /// The mbarriers, 8 bytes each: `full` and `empty` per stage of K and of
  /// V, the query's, the query's `empty` (the dense kernel's: it loops over
  /// tiles), then (FlashKernelConfig::stagesGate) one per consumer warp for
  /// its gate rows.
  int64_t barriers, queryBarrier, queryEmptyBarrier, gateBarriers, total;
  static TmaSharedLayout get(const FlashKernelConfig &cfg);
};

/// Byte offsets in the sm_90a backward kernels' shared memory
/// (BackwardWgmmaKernel.h): two resident tiles of the CTA's rows (K and V,
/// or Q and dY), then two stages of each of the two streamed tiles (Q and
/// dY, or K and V).
struct BackwardTmaLayout {
  static constexpr int64_t kStages = 2;
  int64_t resident[2], streamed[2], streamedStageBytes[2];
  /// The mbarriers, 8 bytes each: `full` and `empty` per stage, then the
  /// resident tiles'.
  int64_t barriers, residentBarrier, total;
  static BackwardTmaLayout get(const FlashKernelConfig &cfg);
};

/// The dynamic shared memory a kernel of `cfg` is launched with.
int64_t sharedMemoryBytes(const FlashKernelConfig &cfg);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_SHARED_MEMORY_LAYOUT_H
