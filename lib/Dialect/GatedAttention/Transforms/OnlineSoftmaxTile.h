//===- OnlineSoftmaxTile.h - the online softmax of one query tile -*- C++
//-*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The math of one tile of the online-softmax form, shared by the dense op
// (operands [B, H, S, D]) and the paged op (queries [T, H, D], keys in
// pages): the query rows of the heads of one GQA group stacked into one
// tile, a loop over key blocks carrying (m, l, acc), the gate in the
// epilogue. Subclasses say where rows and key blocks are read from.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_LIB_TRANSFORMS_ONLINE_SOFTMAX_TILE_H
#define GATED_ATTENTION_LIB_TRANSFORMS_ONLINE_SOFTMAX_TILE_H

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gated_attention {

/// scf.for from `lb` to `ub` carrying `inits`; `body` builds at the
/// builder's insertion point and returns the yielded values. (The tiled
/// forward and backward loops both build theirs with it.)
scf::ForOp
buildForLoop(OpBuilder &b, Location loc, Value lb, Value ub, Value step,
             ValueRange inits,
             function_ref<SmallVector<Value>(Value, ValueRange)> body);

/// A linalg.generic with one init (whose type is the result type) and the
/// body `body` builds from the block arguments.
Value buildGeneric(OpBuilder &b, Location loc, ValueRange ins, Value init,
                   ArrayRef<AffineMap> maps,
                   ArrayRef<utils::IteratorType> iterators,
                   function_ref<Value(OpBuilder &, ValueRange)> body);

/// An f32 tensor of `sizes` filled with `v`, in a buffer of its own: a
/// fill of a `bufferization.alloc_tensor`, not of a `tensor.empty`, which
/// CSE would share between equal fills (two accumulators, or a sum and its
/// compensation) and bufferization then copy into each. The start of a
/// loop-carried tile state, forward and backward.
Value buildFreshFill(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                     double v);
/// The same buffer left undefined (a `bufferization.alloc_tensor`).
Value buildFreshTensor(OpBuilder &b, Location loc,
                       ArrayRef<OpFoldResult> sizes);

/// Query rows per head of the tiles of `op` that gated-attention-tile makes
/// (the group's heads share a tile of about options.queryBlock rows; never
/// more than a static Sq).
int64_t queryRowsPerHead(AttentionOp op, const OnlineSoftmaxOptions &options);

/// tileToOnlineSoftmax with options.kvSplits != 1 (SplitKeys.cpp).
FailureOr<Value> tileWithKeySplits(RewriterBase &rewriter, AttentionOp op,
                                   const OnlineSoftmaxOptions &options);

/// The partial results (OnlineSoftmaxTile::Partial) of part `split` of
/// `splits` of the keys of every row of `op` (a tile of the op): out
/// [B, Hq, Sq, Dv], sum, max and sigma [B, Hq, Sq], all f32.
SmallVector<Value, 4>
buildOnlineSoftmaxPartials(RewriterBase &rewriter, AttentionOp op,
                           const OnlineSoftmaxOptions &options, Value split,
                           Value splits);

/// How many query heads of a GQA group of `group` share one query tile: the
/// whole group up to 16, else its largest divisor below. A tile's IR holds
/// one slice per stacked head, and bufferizing it is superlinear in their
/// number (MQA with 256 query heads did not finish compiling).
int64_t stackedHeadsPerTile(int64_t group);

class OnlineSoftmaxTile {
public:
  /// What the tile math needs of its op.
  struct Spec {
    Type elementType;
    int64_t headDim, valueHeadDim, groupSize, keyBlock;
    double scale;
    GateFunctionAttrInterface gate;
    CombineKind combine;
    bool hasGate, gateShared, gateHeadwise;
    /// Whether build() also returns the rows' log-sum-exp (`lse`).
    bool withLse = false;
    /// Keys per block on a causal tile's diagonal (a divisor of keyBlock;
    /// 0: keyBlock).
    int64_t diagonalKeyBlock = 0;
  };

  OnlineSoftmaxTile(RewriterBase &b, Location loc, const Spec &spec)
      : b(b), loc(loc), spec(spec), f32(b.getF32Type()),
        blockKeys(spec.keyBlock) {}
  virtual ~OnlineSoftmaxTile() = default;

  /// The output of each of query heads firstHead .. firstHead + stack - 1
  /// (which share one K/V head), `rowsTile x Dv` in the element type, one
  /// value a head: each is computed in the buffer it is inserted into, not
  /// in a stacked tile copied out head by head. Keys [0, numKeys) exist;
  /// with `causalOffset`, key j is visible from row i of a head iff
  /// j <= i + causalOffset.
  /// With spec.withLse, also sets `lse` to the rows' log-sum-exp
  /// (`tileRows` x f32, stacked, buildLogSumExp).
  SmallVector<Value> build(Value firstHead, Value numKeys, Value causalOffset);

  /// The log-sum-exp of the last build(); null without spec.withLse.
  Value lse;

  /// Head r's rows [r * rowsTile, + rowsTile) of each stacked tile value,
  /// value by value: every head of stacked[0] in order, then every head of
  /// stacked[1], and so on (the values themselves with one head).
  SmallVector<Value> splitHeads(ArrayRef<Value> stacked);

  /// The unnormalized result of one part of the tile's keys (split-KV), all
  /// f32 with `tileRows` rows: out = sigma sum_j exp(s_j - shift(max)) v_j
  /// and sum = sigma sum_j exp(s_j - shift(max)) over the part's visible
  /// keys j, the rows' reference points `max` (-inf for a row that saw no
  /// key of the part) and the weights' overflow scale `sigma` per row.
  struct Partial {
    Value out, sum, max, sigma;
  };

  /// The partial result of part `split` of `splits` (index values) of keys
  /// [0, numKeys): parts of ceildiv(numKeys, splits) keys rounded up to
  /// whole key blocks, so a part may be empty (out = sum = 0, max = -inf).
  /// The overflow scale counts `splits` times a part's keys, so that the
  /// merged sums of all parts stay below the f32 range.
  Partial buildPartial(Value firstHead, Value numKeys, Value causalOffset,
                       Value split, Value splits);

protected:
  enum class Operand { Query, Key, Value, Gate };

  /// build() with `bound` rows per head, and, when `numRows` (the tile's
  /// real rows per head) is at most 1 at run time -- a decode step -- with
  /// one row per head instead (an scf.if; no branch for `bound` = 1).
  /// Returns each head's output, then (spec.withLse) each head's
  /// log-sum-exp, rows dynamic when there are two versions; leaves rowsTile
  /// and tileRows at `bound`'s.
  SmallVector<Value> buildWithDecodeRows(Value numRows, int64_t bound,
                                         Value firstHead, Value numKeys,
                                         Value causalOffset);
  /// The same for any tile values: `version()` builds them (tensors whose
  /// first dim is a head's or the tile's rows) at the current rowsTile and
  /// tileRows; with two versions their rows are dynamic.
  SmallVector<Value>
  buildWithDecodeRows(Value numRows, int64_t bound,
                      function_ref<SmallVector<Value>()> version);

  /// Rows of head `head` of the query or the gate, zero-padded to
  /// `rowsTile` rows: `rowsTile x width`.
  virtual Value rowsOf(Operand operand, Value head) = 0;
  /// Keys [kb, kb + cols) of the key or value operand of K/V head `kvHead`,
  /// zero-padded to `blockKeys` rows: `blockKeys x width`.
  virtual Value keysOf(Operand operand, Value kvHead, Value kb,
                       OpFoldResult cols) = 0;

  /// `slice` zero-padded at the end of its rows to `paddedRows`, when that
  /// is static and larger.
  Value padRows(Value slice, OpFoldResult paddedRows);
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value empty(ArrayRef<OpFoldResult> sizes, Type t) {
    return tensor::EmptyOp::create(b, loc, sizes, t);
  }
  scf::ForOp forLoop(Value lb, Value ub, Value step, ValueRange inits,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return buildForLoop(b, loc, lb, ub, step, inits, body);
  }

  RewriterBase &b;
  Location loc;
  Spec spec;
  Type f32;
  /// Set by subclasses before build(): the rows of one head's tile, how many
  /// heads are stacked into the tile, and the stacked rows.
  OpFoldResult rowsTile, tileRows;
  int64_t stack = 1;
  /// Keys per block of the key loop being built: spec.keyBlock, or
  /// spec.diagonalKeyBlock on a causal tile's diagonal (keyLoops).
  int64_t blockKeys = 0;

private:
  /// The loop state: the running maximum m, the row sum l and its
  /// compensation (compensated summation); the accumulator: the plain sum
  /// of the current chunk of keys, the compensated sum (acc, accComp) of
  /// the chunks before it and whether a chunk was added to it yet (an i1;
  /// acc and accComp are undefined until then); where the values may
  /// approach the f32 range, max|v| so far and the weights' scale sigma
  /// (f32 scalars). Unused members are null. After the key loops
  /// (finishChunks) acc is the whole sum, and chunk, accComp and folded
  /// are null.
  struct State {
    Value m, l, lComp, acc, accComp, chunk, folded, vmax, sigma;
    SmallVector<Value> values() const {
      SmallVector<Value> all = {m, l, lComp, acc, accComp, chunk, folded};
      for (Value v : {vmax, sigma})
        if (v)
          all.push_back(v);
      return all;
    }
    /// The state whose values() are `v`, with the members `like` has.
    static State of(ValueRange v, const State &like) {
      State s{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
      if (like.vmax) {
        s.vmax = v[7];
        s.sigma = v[8];
      }
      return s;
    }
  };

  /// P V accumulates into a plain sum (State::chunk) that is added to the
  /// compensated acc once per kAccChunkKeys keys, not every key block: the
  /// compensated update is a pass over the whole acc and its compensation,
  /// which costs more per key block than the products on AMX and 3-6% of
  /// the time in f32 (docs/Design.md). The plain f32 sums of a chunk (at
  /// most C + Bk terms) keep the error independent of Skv.
  /// Keys per chunk: a chunk ends with the block that reaches a multiple
  /// of it.
  static constexpr int64_t kAccChunkKeys = 1024;

  /// Whether the scale applies to the scores where they are read (the row
  /// max, the weights' exponent) instead of to the queries: bf16 and f16
  /// queries, extended to f32 unscaled, which the bf16 matrix units
  /// multiply as they are. A positive scale commutes with the row max
  /// (rounding is monotonic), so the max of the unscaled scores times the
  /// scale is the max of the scaled ones, bit for bit.
  bool scalesScores() const {
    return spec.elementType != f32 && spec.scale > 0;
  }

  Value f32Const(OpBuilder &nb, double v) {
    return arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(v));
  }
  Value toF32(OpBuilder &nb, Value x) {
    return x.getType() == f32 ? x : arith::ExtFOp::create(nb, loc, f32, x);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double v) {
    return linalg::FillOp::create(b, loc, f32Const(b, v), empty(sizes, f32))
        .getResult(0);
  }
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(dims, 0, results, b.getContext());
  }
  /// A linalg.generic with one init (whose type is the result type).
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> iterators,
                function_ref<Value(OpBuilder &, ValueRange)> body);

  /// A linalg.generic with several inits (whose types are the results').
  SmallVector<Value>
  genericN(ValueRange ins, ValueRange inits, ArrayRef<AffineMap> maps,
           ArrayRef<utils::IteratorType> iterators,
           function_ref<SmallVector<Value>(OpBuilder &, ValueRange)> body);

  /// Rows [r * rowsTile, + rowsTile) of a stacked tile value.
  Value headRows(Value stacked, int64_t r);
  Value queryTile(Value firstHead);
  /// The loop state after the key blocks of [keyBegin, keyEnd) (keyBegin a
  /// multiple of the key block; keys from keyEnd on masked) of the heads
  /// from firstHead.
  State keyLoops(Value firstHead, Value keyBegin, Value keyEnd);
  State keyBlockStep(Value q, Value k, Value v, State s, Value kb, bool masked);
  /// Whether rescaling the sums by `alpha` changes them (an i1): some row
  /// that saw a key (its max `m` is not -inf) has alpha != 1.
  Value anyRescaled(Value alpha, Value m);
  /// The update of (chunk, acc, accComp) by one key block:
  /// rescaled by alpha where `moved` (anyRescaled), P V_blk added by
  /// `accumulate` to the chunk, which is folded into the compensated acc
  /// when the block ends it.
  State chunkStep(State s, Value alpha, Value moved, Value kb,
                  function_ref<Value(Value)> accumulate);
  /// The state after the last key block: acc the whole sum
  /// (acc - accComp + chunk where a chunk was folded, else chunk), no
  /// accComp.
  State finishChunks(State s);
  SmallVector<Value> epilogue(State s, Value firstHead);
  /// L = shift(m) + log(l) - log(sigma) per row: the weights were
  /// exp(s - shift(m)) sigma.
  Value logSumExp(State s);

  Value numKeys, causalOffset;
  /// Set while building a part of the keys (buildPartial): its first key
  /// and the number of parts, which the overflow scale counts.
  Value partBegin, numParts;
};

} // namespace mlir::gated_attention

#endif // GATED_ATTENTION_LIB_TRANSFORMS_ONLINE_SOFTMAX_TILE_H
