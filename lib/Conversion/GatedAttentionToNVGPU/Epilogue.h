//===- Epilogue.h - the gated output of the flash kernels -------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The epilogue of the flash kernels, on the O accumulator in the layout of
// FragmentLayout.h: O / l, combined with the activated gate (elementwise or
// one value per row), rounded to the element type and stored, each lane
// writing its column pairs as 32-bit accesses.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_EPILOGUE_H
#define GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_EPILOGUE_H

#include "FlashKernelConfig.h"
#include "FragmentSoftmax.h"

namespace mlir::gated_attention::flash {

/// Where the epilogue reads the gate and writes the output: flat buffers
/// and the offsets of this tile's (batch, head) slabs in them.
struct EpilogueOperands {
  Value gate, out, gateBase, outBase, numRows;
  /// Elements between consecutive rows of the gate and of out.
  Value gateRowStride, outRowStride;
  /// Packed GQA heads (GlobalSlab::rowGroup): the tile's row p is row
  /// p / rowGroup (checked against numRows), at p % rowGroup heads of
  /// these strides (null: 0, a gate shared by the heads) from the bases.
  int64_t rowGroup = 1;
  Value gateGroupStride = {}, outGroupStride = {};
  /// The op's log-sum-exp, when it returns it (null: not written): f32 rows
  /// of the tile's [Sq] slab from lseBase, packed heads lseGroupStride
  /// apart.
  Value lse = {}, lseBase = {}, lseGroupStride = {};
  /// Where the warp stages its 16 output rows in shared memory (null: each
  /// lane stores its column pairs itself); FlashKernelConfig::stagesOutput.
  Value staging = {};
  /// The warp's mbarrier for its gate rows, when they come through
  /// `staging` too (FlashKernelConfig::stagesGate; null: loaded by each
  /// lane); fresh, its phase 0 is theirs, or the phase of parity
  /// `gateParity` (an i32: a kernel that loops over tiles uses it once a
  /// tile).
  Value gateBarrier = {}, gateParity = {};
};

/// Writes the rows of the lane (row0 + g and row0 + g + 8) that are below
/// Sq, and their log-sum-exp where `operands.lse` is set (by the first lane
/// of each quad): the final step of the kernel for `state`. `fast` (the
/// sm_90a kernel): O arrives already scaled by normalizedRowScale(), and
/// the built-in gates are activated on the MUFU unit (tanh.approx), rather
/// than O divided by l here and the gate's accurate activation. With
/// `operands.staging` the warp writes its rows into shared memory as 8 x 8
/// blocks (stmatrix, four a time) and lane 0 copies those below Sq out in
/// one bulk copy (cp.async.bulk): a quarter of the register path's stores.
/// Every lane then computes both its rows, a row past Sq with the gate of
/// row Sq - 1.
void emitGatedEpilogue(const KernelBuilder &kb, const FlashKernelConfig &cfg,
                       const LaneLayout &lanes, SoftmaxState state, Value row0,
                       const EpilogueOperands &operands, bool fast = false);

/// k / l for row half `half` of `state` (l reduced over the quad; a row
/// that saw no key, l = 0, takes l = 1: its O is 0), with k = 1/2 where
/// the fast epilogue multiplies by 1 + tanh(g / 2) = 2 sigmoid(g), else 1:
/// the factor by which the sm_90a kernel scales the last key block's P
/// and O's last rescale, so that O reaches emitGatedEpilogue(fast)
/// normalized, one multiplication per element fewer there. 1 / l on the
/// MUFU unit (rcp.approx.ftz).
Value normalizedRowScale(const KernelBuilder &kb, const FlashKernelConfig &cfg,
                         SoftmaxState state, int64_t half);

/// Where a split-KV kernel writes its partial results: O / l as f32 rows
/// and log2 of each row's sum of exp2(scaled score) ("LSE"), per split, for
/// the merge kernel (MergeKernel.cpp) to combine.
struct PartialOperands {
  Value out, lse, outBase, lseBase, numRows;
  Value outRowStride, lseRowStride;
  int64_t rowGroup = 1, outGroupStride = 0, lseGroupStride = 0;
};

/// Writes the lane's rows below numRows of a split's partial result: no
/// gate (the merge applies it once, to the combined rows).
void emitPartialEpilogue(const KernelBuilder &kb, const LaneLayout &lanes,
                         SoftmaxState state, Value row0,
                         const PartialOperands &operands);

} // namespace mlir::gated_attention::flash

#endif // GATED_ATTENTION_CONVERSION_GATED_ATTENTION_TO_NVGPU_EPILOGUE_H
