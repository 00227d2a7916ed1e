//===- FragmentLayout.cpp - where a lane's accumulators are ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Conversion/GatedAttentionToNVGPU/FragmentLayout.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

LaneLayout LaneLayout::build(const KernelBuilder &kb) {
  LaneLayout layout;
  layout.thread =
      gpu::ThreadIdOp::create(kb.builder(), kb.location(), gpu::Dimension::x);
  layout.warp = kb.div(layout.thread, 32);
  layout.lane = kb.rem(layout.thread, 32);
  layout.quadRow = kb.div(layout.lane, 4);
  layout.quadCol = kb.rem(layout.lane, 4);
  return layout;
}

Value mlir::gated_attention::flash::quadReduce(const KernelBuilder &kb, Value x,
                                               bool isMax) {
  for (int32_t offset : {1, 2}) {
    Value other = gpu::ShuffleOp::create(kb.builder(), kb.location(), x, offset,
                                         32, gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    x = isMax ? kb.fmax(x, other) : kb.fadd(x, other);
  }
  return x;
}
