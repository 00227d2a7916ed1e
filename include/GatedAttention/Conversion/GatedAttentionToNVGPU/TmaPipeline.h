//===- TmaPipeline.h - the sm_90a kernel's copy pipeline --------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The copy pipeline of the wgmma kernel: Q and K/V tiles land in shared
// memory by TMA (cp.async.bulk.tensor, 128B swizzle, one 64-column box per
// column atom; see WgmmaAtom.h for the layout), each load completing on an
// mbarrier with the transaction count of its bytes; K and V in a ring of
// two stages, block j in stage j % 2, its barrier's phase (j / 2) % 2.
// TMA zero-fills rows past the end of a (batch, head)'s sequence: the maps
// are 3-D (D, S, B x H), so a tile never reads another head's rows.
//
// All of shared memory is one extern array aligned to 1024 bytes (the
// swizzle atom), with the mbarriers inside it: MLIR 22's
// gpu.dynamic_shared_memory is 16-byte aligned and may overlap other
// shared variables (shared/hopper/HOPPER-NOTES.md, limit 6).
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TMA_PIPELINE_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TMA_PIPELINE_H

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FlashKernelConfig.h"
#include "GatedAttention/Conversion/GatedAttentionToNVGPU/KernelBuilder.h"

namespace mlir::gpu {
class GPUModuleOp;
} // namespace mlir::gpu

namespace mlir::gated_attention::flash {

/// Byte offsets in the wgmma kernel's shared memory.
struct TmaSharedLayout {
  static constexpr int64_t kStages = 2;
  int64_t query, keys, values, keyStageBytes, valueStageBytes, barriers, total;
  static TmaSharedLayout get(const FlashKernelConfig &cfg);
};

class TmaPipeline : public KernelBuilder {
public:
  /// The extern shared array, declared once per gpu.module.
  static constexpr StringLiteral kSharedMemorySymbol = "gated_attention_smem";
  static void declareSharedMemory(OpBuilder &b, Location loc,
                                  gpu::GPUModuleOp module);

  /// `maps` are the tensor maps of Q, K and V (pointers to them in global
  /// memory); `lead` is true in the one thread that issues the copies.
  TmaPipeline(OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
              ValueRange maps, Value lead);

  /// Initializes the mbarriers (the lead thread) and makes them visible to
  /// the CTA and to the TMA unit.
  void initBarriers();
  /// Issues Q rows [rowBase, rowBase + 64) of slab `slab` (batch x Hq +
  /// head), completing on the query barrier.
  void loadQuery(Value rowBase, Value slab);
  void waitQuery();
  /// Issues key block `block` (K and V rows of slab `slab`, batch x Hkv +
  /// kv head) into stage block % 2; only the lead thread's call copies.
  void loadKeyBlock(Value block, Value slab);
  /// Waits until key block `block` has landed.
  void waitKeyBlock(Value block);

  /// !llvm.ptr<3> to the Q tile, and to the K and V tiles of `block`.
  Value queryTile();
  Value keyTile(Value block);
  Value valueTile(Value block);

private:
  Value pointer(int64_t offset, Value stage = nullptr, int64_t stride = 0);
  Value stageOf(Value block);
  Value barrier(Value stage);
  void whenLead(function_ref<void()> body);
  /// TMA loads of the column atoms of a [rows, width] tile at `dst`.
  void loadTile(Value map, Value dst, Value row, Value slab, int64_t rows,
                int64_t width, Value bar);
  Value i32(Value index);

  const FlashKernelConfig &cfg;
  TmaSharedLayout layout;
  Value queryMap, keyMap, valueMap, lead;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_TMA_PIPELINE_H
