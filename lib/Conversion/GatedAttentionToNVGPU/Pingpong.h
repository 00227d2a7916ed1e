//===- Pingpong.h - consumer warpgroups taking turns ------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// FlashAttention-3's pingpong schedule for two consumer warpgroups: they
// take turns issuing their GEMMs, so that one warpgroup's softmax runs while
// the other's GEMMs occupy the tensor cores. Each consumer c waits for its
// turn on named barrier 1 + c (bar.sync over both warpgroups' 256 threads)
// and, once its GEMMs are issued, passes the turn with a bar.arrive on the
// other's barrier. Consumer 0 goes first: it arrives on its own barrier
// before its first turn. Consumer 1's last turn passes to no one, so that
// every barrier phase that is begun completes (each consumer takes the same
// number of turns: the tile's key blocks plus one).
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_PINGPONG_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_PINGPONG_H

#include "KernelBuilder.h"

namespace mlir::gated_attention::flash {

class Pingpong : public KernelBuilder {
public:
  /// The schedule of consumer warpgroup `consumer` (0 or 1); with `enabled`
  /// false every call builds nothing.
  Pingpong(OpBuilder &b, Location loc, Value consumer, bool enabled)
      : KernelBuilder(b, loc), consumer(consumer), enabled(enabled) {}

  /// Before the first turn.
  void start();
  /// Waits until it is this consumer's turn.
  void waitTurn();
  /// Passes the turn to the other consumer; `last`: after the last turn.
  void passTurn(bool last = false);

  /// Threads that meet at each barrier: two warpgroups.
  static constexpr int64_t kThreads = 256;

private:
  /// Consumer c's barrier, 1 + c (0 is the CTA-wide one).
  Value barrierOf(Value c);
  void arrive(Value barrier);
  /// The thread count of each barrier, as an i32.
  Value threads();

  Value consumer;
  bool enabled;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_PINGPONG_H
