//===- KernelInterface.h - a kernel's arguments, grid, launch ---*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// One value per kernel, KernelInterface::get(cfg), holds everything a flash
// kernel and its callers must agree on: its named, typed arguments in
// parameter order, its grid in launch symbols, its threads and its shared
// memory. Everything else derives from it: the gpu.func type
// (FlashLaunch.cpp), the kernels' access to their arguments by name
// (KernelArguments), the host code's launch operands and grid
// (FlashLaunch.cpp) and the JSON launch description that launchers outside
// MLIR read (LaunchDescription.cpp). No other code spells an argument's
// position.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_INTERFACE_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_INTERFACE_H

#include "FlashKernelConfig.h"
#include "TileScheduler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/StringMap.h"

#include <array>
#include <vector>

namespace mlir::gated_attention::flash {

enum class ArgumentKind {
  /// A flat memref<?xT> (T the element type, i32 or f32).
  Buffer,
  /// An !llvm.ptr to a TMA map in global memory (the dense sm_90a kernel's
  /// Q, K and V; the sm_90a backward kernels' K and V).
  TensorMap,
  /// A size (index).
  Index,
  /// A (batch or head) stride, in elements, of the buffers `of` (index).
  Stride,
};

struct KernelArgument {
  std::string name;
  ArgumentKind kind;
  /// Buffers and tensor maps: the element type and the shape that the
  /// launch description documents, in launch symbols ("B x Hq x Sq x D").
  Type elementType;
  std::string shape;
  /// Buffers: the row stride the kernel is compiled for and the bytes each
  /// row start must be aligned to; 0 where the kernel has no such contract.
  int64_t rowStride = 0, rowAlignment = 0;
  /// Tensor maps: the dims, innermost first (symbols or products "B*Hq"),
  /// and the rows of a box (one 128-byte swizzle span wide).
  SmallVector<std::string, 3> dims;
  int64_t boxRows = 0;
  /// Strides: the buffers they lay out (K and V may share theirs) and the
  /// dim, "B" or "H".
  SmallVector<std::string, 2> of;
  std::string dim;

  Type getType(MLIRContext *ctx) const;
};

/// A grid dimension: ceildiv(symbol, divisor), plus `addend` where it is
/// not empty. Symbols are launch sizes (B, Sq, Skv, T, splits) or constants
/// of the kernel (Hq, one).
struct GridDimension {
  StringRef symbol;
  int64_t divisor = 1;
  StringRef addend;
};

class KernelInterface {
public:
  static KernelInterface get(const FlashKernelConfig &cfg);

  const FlashKernelConfig &getConfig() const { return cfg; }
  ArrayRef<KernelArgument> getArguments() const { return arguments; }
  ArrayRef<GridDimension> getGrid() const { return grid; }
  /// The argument `name`; asserts that there is one.
  const KernelArgument &lookup(StringRef name) const;
  unsigned position(StringRef name) const;

  FunctionType getFunctionType(MLIRContext *ctx) const;
  int64_t threads() const { return cfg.threads(); }
  int64_t sharedMemoryBytes() const;
  /// The instructions ("mma.sync", "wgmma", "simt") and the argument layout
  /// ("dense", "dense-split", "paged", "paged-split", "split-merge").
  StringRef instructions() const;
  StringRef layout() const;

  /// The host's launch operands in parameter order: each the value that
  /// `named` holds under the argument's name, a stride argument's under
  /// "<first buffer it lays out>.<dim>" ("k.B").
  SmallVector<Value> launchOperands(const llvm::StringMap<Value> &named) const;
  /// The host's grid, from the values of its launch symbols; the kernel's
  /// constants fold. A persistent kernel on a device of `smCount` SMs (> 0)
  /// gets min(its tiles, smCount x ctasPerSM()) CTAs along x; otherwise,
  /// and with 0, one CTA per tile.
  gpu::KernelDim3 buildGrid(OpBuilder &b, Location loc,
                            const llvm::StringMap<Value> &symbols,
                            int64_t smCount = 0) const;
  /// Whether the kernel loops over tiles, each CTA taking every n-th of
  /// the tiles of the grid's description, n being the CTAs launched
  /// (TileScheduler.h: TileSequence): the dense sm_90a forward kernel. Any
  /// grid computes every tile; fewer CTAs than tiles loop.
  bool persistent() const;
  /// The CTAs of the kernel that an sm_90 SM holds at once (its registers
  /// and shared memory): how many a persistent launch puts on each SM.
  int64_t ctasPerSM() const;

  /// The launch description of the kernel `name` as JSON: what a launcher
  /// outside MLIR needs to call the PTX (LaunchDescription.cpp;
  /// python/gated_attention/launch.py documents the schema).
  std::string describe(StringRef name) const;

private:
  explicit KernelInterface(const FlashKernelConfig &cfg) : cfg(cfg) {}

  FlashKernelConfig cfg;
  std::vector<KernelArgument> arguments;
  std::array<GridDimension, 3> grid;
};

/// A kernel's entry-block arguments by name: how the kernel bodies reach
/// them.
class KernelArguments {
public:
  KernelArguments(const FlashKernelConfig &cfg, Block &entry)
      : interface(KernelInterface::get(cfg)), entry(&entry) {}

  Value operator[](StringRef name) const {
    return entry->getArgument(interface.position(name));
  }
  /// The strides of `operand`, laid out by stride arguments: its group's
  /// (batch, head) strides and its row stride (a constant built by `kb`).
  OperandStrides strides(const KernelBuilder &kb, StringRef operand) const;

private:
  KernelInterface interface;
  Block *entry;
};

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_KERNEL_INTERFACE_H
