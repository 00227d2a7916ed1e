//===- AttentionChainMatchers.cpp - Q Kᵀ ... P V and its gate combine -----===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The chain is matched from its end (the P V contraction) upwards, each step
// by the matchers of the other files; any mismatch returns nullopt.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/Utils/RaiseMatchers.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::gated_attention;

/// Whether the combine may read the gate through `map` (of `rank` dims): a
/// projected permutation keeping the batch (or batch·heads) and the rows;
/// the heads (4-D) and the last dimension may be broadcast, and the gate's
/// dimensions may come in another order (the paper's code gates in
/// [B, S, H, D]; the fold transposes such a gate).
static bool isGateMap(AffineMap map, int64_t rank) {
  if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
    return false;
  SmallVector<int64_t> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(cast<AffineDimExpr>(e).getPosition());
  return llvm::is_contained(dims, 0) && llvm::is_contained(dims, rank - 2);
}

std::optional<GateCombine>
mlir::gated_attention::matchGateCombine(linalg::GenericOp root,
                                        GateActivationFn activation) {
  if (root.getNumResults() != 1 || root.getNumDpsInputs() != 2 ||
      root.getNumParallelLoops() != root.getNumLoops() ||
      !hasAttentionRank(root.getResult(0)))
    return std::nullopt;
  // The output and the attention input are read at every element, the
  // gate as isGateMap allows.
  int64_t rank = root.getNumLoops();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, root.getContext());
  SmallVector<AffineMap> maps = root.getIndexingMapsArray();
  if (maps[2] != id)
    return std::nullopt;
  Block *body = root.getBody();
  auto *combineOp = yielded(root).getDefiningOp();
  if (!combineOp || !isa<arith::MulFOp, arith::AddFOp>(combineOp))
    return std::nullopt;
  CombineKind combine =
      isa<arith::MulFOp>(combineOp) ? CombineKind::mul : CombineKind::add;
  // One side is the attention output (an input of the generic as is), the
  // other the activation of the gate input, in this body or in an
  // elementwise producer of the gate operand.
  for (int side = 0; side < 2; ++side) {
    auto arg = dyn_cast<BlockArgument>(combineOp->getOperand(side));
    Value act = combineOp->getOperand(1 - side);
    if (!arg || arg.getOwner() != body || arg.getArgNumber() > 1)
      continue;
    unsigned other = 1 - arg.getArgNumber();
    if (maps[arg.getArgNumber()] != id || !isGateMap(maps[other], rank))
      continue;
    Value attention = root.getDpsInputs()[arg.getArgNumber()];
    if (auto fn = dyn_cast_or_null<GateFunctionAttrInterface>(
            activation(act, body->getArgument(other))))
      return GateCombine{
          attention, root.getDpsInputs()[other], fn, combine, maps[other], {}};
    if (act != body->getArgument(other))
      continue;
    Value input, activated = root.getDpsInputs()[other];
    SmallVector<ReassociationIndices> collapse;
    if (auto c = activated.getDefiningOp<tensor::CollapseShapeOp>()) {
      activated = c.getSrc();
      collapse = c.getReassociationIndices();
    }
    if (linalg::GenericOp actOp = matchUnaryElementwise(activated, input))
      if (auto fn = dyn_cast_or_null<GateFunctionAttrInterface>(
              activation(yielded(actOp), actOp.getBody()->getArgument(0))))
        return GateCombine{attention, input,       fn,
                           combine,   maps[other], collapse};
  }
  return std::nullopt;
}

std::optional<AttentionChain>
mlir::gated_attention::matchAttentionChain(Value out) {
  std::optional<BatchedMatmul> pv = matchBatchedMatmul(out);
  if (!pv || pv->rhsTransposed)
    return std::nullopt;
  AttentionChain chain;
  chain.value = pv->rhs;
  Value probabilities = pv->lhs, guarded;
  if (Value p = matchEmptyRowGuard(probabilities, guarded))
    probabilities = p;
  Value scores = matchSoftmax(probabilities);
  if (!scores || (guarded && guarded != scores))
    return std::nullopt;
  double maskScale;
  if (Value unmasked = matchCausalMask(scores, &maskScale)) {
    chain.causal = true;
    chain.scale *= maskScale;
    scores = unmasked;
  }
  // Constant factors on the scores, on Q, or on K (before or after its
  // transpose; torch scales Q and Kᵀ by sqrt(scale) each) multiply up.
  auto unscale = [&](Value v) {
    double factor;
    while (Value unscaled = matchScale(v, factor)) {
      chain.scale *= factor;
      v = unscaled;
    }
    return v;
  };
  scores = unscale(scores);
  std::optional<BatchedMatmul> qk = matchBatchedMatmul(scores);
  if (!qk)
    return std::nullopt;
  chain.scores = scores;
  chain.query = unscale(qk->lhs);
  chain.key = unscale(qk->rhs);
  if (!qk->rhsTransposed) {
    // Kᵀ made explicitly: a transpose of the last two dimensions.
    auto transpose = chain.key.getDefiningOp<linalg::TransposeOp>();
    int64_t rank = cast<ShapedType>(chain.key.getType()).getRank();
    SmallVector<int64_t> swapLast = llvm::to_vector(llvm::seq<int64_t>(rank));
    std::swap(swapLast[rank - 1], swapLast[rank - 2]);
    if (!transpose || transpose.getPermutation() != ArrayRef(swapLast))
      return std::nullopt;
    chain.key = unscale(transpose.getInput());
  }
  return chain;
}

bool mlir::gated_attention::isPrivateChain(Operation *root, Value scores) {
  Operation *first = scores.getDefiningOp();
  SetVector<Operation *> above, chain;
  BackwardSliceOptions backward;
  backward.inclusive = true;
  (void)getBackwardSlice(root, &above, backward);
  // The ops between `first` and `root`: reached from `first` without
  // leaving what `root` depends on.
  ForwardSliceOptions forward;
  forward.inclusive = true;
  forward.filter = [&](Operation *op) { return above.contains(op); };
  getForwardSlice(first, &chain, forward);
  return llvm::all_of(chain, [&](Operation *op) {
    return op == root || llvm::all_of(op->getUsers(), [&](Operation *user) {
             return chain.contains(user);
           });
  });
}
