//===- PackOperands.h - operands packed for register tiles ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The register-tiled contractions of the CPU tiles (S = Q Kᵀ, P V) read
// their right operand along rows, one f32 row of the tile per reduction
// step. It is packed once per block into that form by a linalg.generic
// (vectorized as 16 x 16 shuffles or rows): `Kᵀ` transposed, a narrower
// element type widened, and for the forward's `P V` an f32 `V` copied. A
// block that the paged op assembles from the pieces of its pages is packed
// piece by piece from the pages instead, so that it is not copied twice.
// Used by gated-attention-vectorize-tiles.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_PACKOPERANDS_H
#define GATED_ATTENTION_LIB_TRANSFORMS_PACKOPERANDS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gated_attention {

/// Packs the right operand of contraction `op` into an f32 (k, n) tile, so
/// that its register tiles read it along rows without converting each
/// element once per row tile: a (n, k) operand (`S = Q Kᵀ`) is transposed,
/// a narrower element type is extended, and with `copyF32` an f32 (k, n)
/// one is copied: the forward's `P V` then reads V from a buffer it has
/// just written, at a static stride, which ran 1.04x as fast on an AMX Xeon
/// (2026-12-06) as reading V where the caller put it; the backward's
/// products ran 0.96x with their operands copied. A block assembled from
/// pieces (the paged op's keys spanning pages) is packed from the pieces,
/// and its other readers (max|v|; bf16's from the high half of the f32
/// bits) read the packed copy: assembling first had read and written each
/// key and value twice (paged decode steps ran 1.12-1.30x as fast without
/// in f32, 1.03-1.12x in bf16, 2026-12-07). Returns the op that
/// packs (a piece, for an assembled block), to be tiled like the others,
/// or null when there is nothing to pack.
linalg::GenericOp packRhs(RewriterBase &rewriter, linalg::GenericOp op,
                          bool copyF32);

/// The bf16 pairs (k/2, n, 2) of the reduction dimension k that the matrix
/// units' pair contractions read as their right operand, from `rhs`: (n, k)
/// keys when `transposed`, else (k, n) values. A block assembled from
/// pieces is packed from the pieces, as packRhs does, and max|v| reads the
/// packed values. Returns the packed operand and the op that packs (a
/// piece's, for an assembled block), for emitPairPack.
std::pair<Value, linalg::GenericOp>
packPairs(RewriterBase &rewriter, Location loc, Value rhs, bool transposed);

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_PACKOPERANDS_H
