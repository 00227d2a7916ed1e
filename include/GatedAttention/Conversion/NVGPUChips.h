//===- NVGPUChips.h - the NVIDIA GPUs the PTX path targets ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_NVGPUCHIPS_H
#define GATED_ATTENTION_CONVERSION_NVGPUCHIPS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::gated_attention {

/// A chip the tensor-core kernel runs on: it needs cp.async, ldmatrix and
/// bf16 mma.sync (sm_80 and later).
struct NVGPUChip {
  llvm::StringRef name;
  /// LLVM NVPTX features: the oldest PTX ISA that knows the chip.
  llvm::StringRef ptxFeatures;
  /// Dynamic shared memory one CTA may opt into, in bytes.
  int64_t maxSharedMemoryPerBlock;
  /// wgmma, setmaxnreg: the architecture-specific features of sm_90a.
  bool hasWgmma = false;
};

inline llvm::ArrayRef<NVGPUChip> getSupportedNVGPUChips() {
  static const NVGPUChip chips[] = {
      {"sm_80", "+ptx70", 163 * 1024},
      {"sm_86", "+ptx71", 99 * 1024},
      {"sm_89", "+ptx78", 99 * 1024},
      {"sm_90", "+ptx80", 227 * 1024},
      {"sm_90a", "+ptx80", 227 * 1024, /*hasWgmma=*/true},
  };
  return chips;
}

/// The chip called `name`, or null.
inline const NVGPUChip *lookupNVGPUChip(llvm::StringRef name) {
  for (const NVGPUChip &chip : getSupportedNVGPUChips())
    if (chip.name == name)
      return &chip;
  return nullptr;
}

/// The values of the `kernel` option of the tensor-core pass and the PTX
/// pipeline, and their list for diagnostics.
inline bool isKnownNVGPUKernel(llvm::StringRef kernel) {
  return kernel == "auto" || kernel == "mma-sync" || kernel == "wgmma";
}
constexpr const char *kNVGPUKernelList = "auto, mma-sync or wgmma";

/// The largest `sm-count` the tensor-core pass and the PTX pipeline take:
/// the chips above have at most 144 SMs (a whole GH100), so a larger count
/// is a mistake, not a device.
constexpr int64_t kMaxSMCount = 1024;

/// "sm_80, sm_86, ...": for diagnostics.
inline std::string supportedChipList() {
  std::string list;
  for (const NVGPUChip &chip : getSupportedNVGPUChips())
    list += (list.empty() ? "" : ", ") + chip.name.str();
  return list;
}

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_CONVERSION_NVGPUCHIPS_H
