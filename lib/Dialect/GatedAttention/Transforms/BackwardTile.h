//===- BackwardTile.h - the tiles of the FlashAttention-2 backward -*- C++ -*-//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The tiled CPU form of gated_attention.attention_backward, in linalg on
// static tensor tiles inside scf.forall loops (the forward's online-softmax
// form, so that VectorizeTiles register-tiles its contractions):
//
//   1. preprocessing, per query block: L (given, or recomputed by a key
//      loop), Y = P V where the gate needs it, dY, D = rowsum(dY * Y) and
//      the gate's gradient;
//   2. dK, dV and dQ in one pass over the key blocks, in parallel over
//      (batch, K/V head, split): split s of a head takes its key blocks s,
//      s + splits, ...; per key block the query blocks of the group's heads
//      looped, P = exp(scale s - L) recomputed, dK and dV accumulated in f32
//      tiles, and dQ += dS K into the split's own f32 partial dQ;
//   3. dQ: the splits' partials summed in split order (the same bits on any
//      thread count); dK and dV copied from where the splits staged them.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_BACKWARD_TILE_H
#define GATED_ATTENTION_LIB_TRANSFORMS_BACKWARD_TILE_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gated_attention {

class BackwardTileBuilder {
public:
  /// `pairOperands`: the five products of a bf16 op take bf16 operands
  /// (dY, P and dS rounded to bf16) for the matrix units' pair products;
  /// else only Sᵀ = K Qᵀ, whose operands are both inputs, does.
  BackwardTileBuilder(RewriterBase &b, AttentionBackwardOp op,
                      int64_t queryBlock, int64_t keyBlock,
                      bool pairOperands = false);

  /// The op's results: dq, dk, dv[, dg].
  SmallVector<Value> build();

protected:
  /// What the preprocessing writes, per query row (f32): dY [B, Hq, Sq,
  /// Dv] (bf16 with pairOperands), L (the op's lse operand where given) and D
  /// [B, Hq, Sq], and the gate's gradient [B, Hq, Sq, Dg]: in f32 before the
  /// sum over the heads of a shared gate, else the result in the element type
  /// (null without a gate).
  struct Rows {
    Value dy, lse, delta, gateGrad;
  };
  Rows preprocess();
  /// dK and dV (summed over each GQA group) and dQ, in one pass over the
  /// key blocks: {dq, dk, dv}.
  SmallVector<Value> keyBlockGrads(const Rows &rows);
  /// How many parts the key blocks of a K/V head are split into, each
  /// accumulating its own f32 dQ (see keyBlockGrads).
  Value keySplits();
  /// dQ: the split parts' partial sums [B * splits, Hq, Sq, D] added in
  /// split order and rounded.
  Value sumQueryGrads(Value partial, Value splits);
  /// dK or dV from the staged key blocks of keyBlockGrads.
  Value unstageKeyBlocks(Value staged, Value splits, Value like);
  /// The gate's gradient in the gate's layout and type.
  Value gateGrad(Value perHead);

  // Per-tile pieces (BackwardTile.cpp).

  /// The loop body of an scf.forall: the tiles to write and where.
  struct TileWrite {
    Value tile;      // static, padded: block rows x width, or block rows
    unsigned output; // which shared output
    Value batch, head, row0;
    OpFoldResult rows;
  };
  /// An scf.forall over `bounds` with `outputs`, marked for VectorizeTiles;
  /// `body` builds one iteration at the rewriter's insertion point.
  SmallVector<Value>
  forall(ArrayRef<Value> bounds, ValueRange outputs,
         function_ref<SmallVector<TileWrite>(ValueRange ivs)> body);
  /// forall over (batch, heads, the blocks of `block` rows of `limit`):
  /// the whole blocks, whose body sees the static size `block`, then the
  /// last partial ones, whose body sees the dynamic rest.
  SmallVector<Value> blockForall(
      int64_t heads, Value limit, int64_t block, ValueRange outputs,
      function_ref<SmallVector<TileWrite>(Value, Value, Value, OpFoldResult)>
          body);
  /// scf.for from `lb` to `ub` by `step` carrying `inits`.
  SmallVector<Value>
  forLoop(Value lb, Value ub, Value step, ValueRange inits,
          function_ref<SmallVector<Value>(Value, ValueRange)> body);
  /// The blocks of `block` rows (keys) from `lb` to `ub` <= `limit`,
  /// carrying `inits`: the whole blocks in one loop, whose body sees the
  /// static size `block` (its tiles are views, not padded copies), then
  /// the last partial one, whose body sees min(block, limit - start)
  /// (dynamic: its tiles are padded).
  using BlockBody =
      function_ref<SmallVector<Value>(Value, OpFoldResult, ValueRange)>;
  SmallVector<Value> blockLoop(Value lb, Value ub, int64_t block, Value limit,
                               ValueRange inits, BlockBody body);

  /// Rows [row0, row0 + rows) of head `head` of batch `batch` of a
  /// [B, H, S, W] (or [B, H, S]) tensor, zero-padded to `block` rows:
  /// `block x W` (`block` when the tensor has rank 3 or `flat` drops W =
  /// 1), extended to f32 when `widen`. A static `rows == block` takes a
  /// view of the rows, without a padded copy.
  Value rowsOf(Value source, Value batch, Value head, Value row0,
               OpFoldResult rows, int64_t block, bool widen, bool flat = false);
  /// Rows [row0, row0 + rows) of `dest` ([B, H, S, W]) replaced by the
  /// first `rows` rows of `tile` (`block x W`).
  Value putRows(Value dest, Value tile, Value batch, Value head, Value row0,
                OpFoldResult rows);

  /// A linalg.generic with one init; iterators from the init's map (a
  /// loop the init does not index is a reduction).
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                function_ref<Value(OpBuilder &, ValueRange)> body);
  /// init + lhs x rhs over loops (d0, d1, d2), d2 reduced.
  Value contract(Value lhs, AffineMap lhsMap, Value rhs, AffineMap rhsMap,
                 Value init);
  /// buildFreshFill of a static shape: a loop state's own buffer.
  Value filled(ArrayRef<int64_t> shape, double v);
  /// An f32 tile rounded to the element type.
  Value rounded(Value tile);

  /// Whether key `key` is visible from query row `row` (index values): both
  /// exist and, with the causal mask, key <= row + offset.
  Value visible(OpBuilder &nb, Value row, Value key);
  /// The weights of a `Bq x Bk` score tile S = Q Kᵀ (unscaled) of rows
  /// row0.. and keys key0..: exp(scale s - L) where visible, else 0 (a
  /// masked key, a row past Sq, a row that sees no key). `keyMajor`: the
  /// tile is Sᵀ = K Qᵀ, `Bk x Bq`, and so is the result.
  Value weights(Value scores, Value lse, Value row0, Value key0,
                bool keyMajor = false);
  /// dS = scale P (dP - D) (buildScoreGrad), `Bq x Bk` (`Bk x Bq`, D along
  /// the columns, when `keyMajor`), in f32 or rounded to `element`.
  Value scoreGrads(Value p, Value dp, Value delta, bool keyMajor = false,
                   Type element = nullptr);
  /// A 2-D tile transposed.
  Value transposed(Value tile);
  /// The keys visible from rows [row0, row0 + rows): [0, this).
  Value keyEnd(Value row0, Value rows);
  /// The rows of the query block from `row0`: min(Bq, Sq - row0); the keys
  /// of the key block from `key0`: min(Bk, Skv - key0).
  Value rowsFrom(Value row0) {
    return arith::MinSIOp::create(b, loc, index(bq),
                                  arith::SubIOp::create(b, loc, numRows, row0));
  }
  Value keysFrom(Value key0) {
    return arith::MinSIOp::create(b, loc, index(bk),
                                  arith::SubIOp::create(b, loc, numKeys, key0));
  }
  /// The first row that sees key `key0` (0 without the causal mask).
  Value firstRow(Value key0);

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32Const(OpBuilder &nb, double v) {
    return arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(v));
  }
  Value toF32(OpBuilder &nb, Value x) {
    return x.getType() == f32 ? x : arith::ExtFOp::create(nb, loc, f32, x);
  }
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(dims, 0, results, b.getContext());
  }
  /// (Folded: a static dim is a constant, so that the sizes built from it
  /// fold too and the tiles' tensors get static types, not casts, which
  /// canonicalization would fold into the foralls.)
  Value dim(Value t, int64_t i) {
    return b.createOrFold<tensor::DimOp>(loc, t, i);
  }
  /// A new tensor for a gradient or a per-row quantity (never merged with
  /// another by CSE: see the reference lowering's gradient()).
  Value newTensor(ArrayRef<OpFoldResult> sizes, Type type);
  /// The tensor a result is written into: a tensor.empty, which
  /// empty-tensor elimination replaces by the caller's buffer where the
  /// result is materialized in one (no allocation and copy per call).
  Value resultTensor(ArrayRef<OpFoldResult> sizes, Type type);
  /// `t` as `type` (a tensor.cast where only static sizes differ).
  Value castTo(Value t, Type type);

  /// The preprocessing's key loops (without the forward's L; where the
  /// gate needs Y): L = m + log l and Y = sum_j P_j v_j of a query tile
  /// `q` (f32, unscaled) of K/V head `kvHead`.
  Value recomputeLse(Value q, Value batchIv, Value kvHead, Value row0,
                     Value rows);
  Value recomputeOutput(Value q, Value lse, Value batchIv, Value kvHead,
                        Value row0, Value rows);

  RewriterBase &b;
  AttentionBackwardOp op;
  Location loc;
  Type f32, elementType;
  int64_t bq, bk, d, dv, group;
  double scale;
  bool causal, pairOperands;
  Value batch, numRows, numKeys, causalOffset;
};

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_BACKWARD_TILE_H
