//===- RaiseBuilders.h - IR the raising patterns build ----------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_TRANSFORMS_RAISEBUILDERS_H
#define GATED_ATTENTION_TRANSFORMS_RAISEBUILDERS_H

#include "mlir/IR/Builders.h"

namespace mlir::gated_attention {

/// linalg.transpose of `v` by `perm` into a new tensor (normalization's
/// transposes and the fold's transposed gate).
Value createTranspose(OpBuilder &b, Location loc, Value v,
                      ArrayRef<int64_t> perm);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_TRANSFORMS_RAISEBUILDERS_H
