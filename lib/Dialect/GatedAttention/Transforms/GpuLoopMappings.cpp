//===- GpuLoopMappings.cpp - parallel loop mappings the GPU path can use --===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// Upstream's convert-parallel-loops-to-gpu reports an scf.parallel whose
// `mapping` is not GPU processor mappings as an error but does not fail:
// the loop then runs sequentially on the host and the pipeline succeeds
// after printing an error. Before the GPU mapping, a CPU tile grid's
// mapping (#gated_attention.tile) is dropped, so that gpu-map-parallel-loops
// maps the loop like any other, and any other foreign mapping is an error
// that fails the pass.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"

namespace mlir::gated_attention {
#define GEN_PASS_DEF_GATEDATTENTIONGPULOOPMAPPINGSPASS
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h.inc"
} // namespace mlir::gated_attention

using namespace mlir;
using namespace mlir::gated_attention;

namespace {
template <typename AttrT> bool allOf(ArrayAttr mapping) {
  return llvm::all_of(mapping, [](Attribute a) { return isa<AttrT>(a); });
}

struct GatedAttentionGpuLoopMappingsPass
    : gated_attention::impl::GatedAttentionGpuLoopMappingsPassBase<
          GatedAttentionGpuLoopMappingsPass> {
  void runOnOperation() override {
    StringRef name = gpu::getMappingAttrName();
    WalkResult result = getOperation()->walk([&](scf::ParallelOp loop) {
      Attribute attr = loop->getAttr(name);
      if (!attr)
        return WalkResult::advance();
      auto mapping = dyn_cast<ArrayAttr>(attr);
      if (mapping && allOf<gpu::ParallelLoopDimMappingAttr>(mapping))
        return WalkResult::advance();
      if (mapping && allOf<TileMappingAttr>(mapping)) {
        loop->removeAttr(name);
        return WalkResult::advance();
      }
      loop.emitOpError() << "has a `" << name << "` (" << attr
                         << ") that is neither GPU processor mappings "
                            "(#gpu.loop_dim_map) nor a CPU tile grid's; the "
                            "GPU lowering cannot map this loop";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
