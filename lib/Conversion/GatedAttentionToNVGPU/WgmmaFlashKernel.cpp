//===- WgmmaFlashKernel.cpp - the sm_90a flash kernel's main loop ---------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The Hopper forward kernel with FlashAttention-3's warp specialization
// (Shah et al., arXiv:2407.08608; the hopper/ kernels of
// Dao-AILab/flash-attention): a CTA owns 64 x (warps / 4)
// query rows of one (batch, query head) (TileScheduler.h). Warpgroup 0,
// the producer, gives up registers (setmaxnreg) and one of its threads
// issues the TMA copies of Q and of the key blocks into a two-stage ring
// (TmaPipeline.h), waiting for a stage to be released before refilling it.
// The consumer warpgroups take the registers and compute 64 rows each,
// overlapping the softmax with the tensor cores as FlashAttention-3 does:
// iteration j issues S_j = Q K_j^T (SS wgmma) and O += P_{j-1} V_{j-1}
// (RS wgmma, P in registers; WgmmaAtom.h) back to back, waits for S_j
// alone, runs the softmax of block j while P V runs, then waits for P V.
// O's rescale by block j's factor waits for the next iteration, between
// its two issues (rescaleFirst(); with pingpong it follows the P V wait).
// Block 0's S is peeled before the loop and the last P V after it. K_j is
// released as soon as S_j completes, V_{j-1} once P V has. The online softmax,
// the mask and the gated epilogue are the mma.sync kernel's (FragmentSoftmax.h,
// Epilogue.h), on the same accumulator layout. With two consumers and D <= 128
// they take turns issuing their GEMMs (Pingpong.h). The paged kernel is the
// same loop over one sequence's packed queries (PagedTile.h), its producer
// warpgroup copying rows through the block table (TmaPipeline.h). With
// FlashKernelConfig::persistent the dense kernel loops over tiles
// (TileScheduler.h: TileSequence), longest first, the copy pipeline running
// on across them, so that the producer loads the next tile's K/V (and its Q,
// once both consumers have released the Q tile) while the consumers finish
// the previous tile. Not yet: GQA packing for the dense kernel; a persistent
// key loop as short as the one-tile kernel's (1-4% longer in the SASS: the
// blocks' stages and phases from the pipeline's count, the waits'
// convergence barriers).
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"
#include "FlashKernel.h"
#include "PagedTile.h"
#include "Pingpong.h"
#include "TileScheduler.h"
#include "TmaPipeline.h"
#include "WgmmaAtom.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

namespace {
class WgmmaFlashKernel : public KernelBuilder {
public:
  WgmmaFlashKernel(OpBuilder &b, Location loc, const FlashKernelConfig &cfg)
      : KernelBuilder(b, loc), cfg(cfg) {}

  void build(gpu::GPUFuncOp func);

private:
  /// The dense kernel: a (batch, head) slab, copied by TMA.
  void buildDense(Block &entry, Value thread, Value warpgroup);
  /// The paged kernel: packed queries of one sequence (PagedTile.h), rows
  /// copied through the block table.
  void buildPaged(Block &entry, Value thread, Value warpgroup);
  /// What a role does per tile: `body(rowBase, parity)` with the tile's
  /// first (packed) row and its parity (i32: the role's count of tiles so
  /// far, mod 2), `range` set for the tile.
  using TileBody = function_ref<void(Value, Value)>;
  using ForEachTile = function_ref<void(bool, TileBody)>;
  /// The barriers, then the producer and the consumers, each running
  /// `forEachTile(isProducer, body)` after its setmaxnreg (the TMA
  /// producer's in its issuing thread alone).
  void runRoles(Value thread, Value warpgroup, ForEachTile forEachTile,
                function_ref<EpilogueOperands()> epilogue);
  /// Warpgroup 0, per tile: loads Q, then every key block into its stage
  /// once the stage is free (TMA: one thread issues; row copies: all 128
  /// copy). The dense kernel's tiles follow one another: K of the first
  /// block goes first, then Q once the consumers have released the
  /// previous tile's.
  void produce(Value rowBase, Value parity);
  /// Consumer warpgroup `consumer`: what its tiles share, the lanes of
  /// `thread` and the shared tiles' descriptors and the pingpong schedule.
  void prepareLanes(Value thread);
  void prepareConsumer(Value consumer);
  /// Its 64 rows of a tile, through every key block, and the epilogue.
  void consume(Value thread, Value consumer, Value rowBase, Value parity,
               function_ref<EpilogueOperands()> epilogue);
  /// Consumers of the dense kernel: each warp's arrival that it no longer
  /// reads the tile's Q (TmaPipeline::releaseQuery).
  void releaseQuery();
  /// Issues S = Q K^T of key block `block`.
  Value issueScores(Value block);
  /// Waits for V of key block `block`, rescales O by the pending factors
  /// (rescaleFirst()), issues O += P V with the O and P of loop state
  /// `values`; returns the new O (pending).
  SmallVector<Value> issueValues(Value block, MutableArrayRef<Value> values);
  /// Waits for that P V, releases V and makes `out` the state's O.
  void finishValues(Value block, ArrayRef<Value> out,
                    MutableArrayRef<Value> values);
  /// The loop state: the softmax state (m, l, O), P of the previous block,
  /// packed, then the factors of each row half that O still awaits
  /// (rescaleFirst()).
  SoftmaxState softmaxState(MutableArrayRef<Value> values) const {
    return SoftmaxState(values.take_front(numSoftmaxValues));
  }
  MutableArrayRef<Value> probabilities(MutableArrayRef<Value> values) const {
    return values.drop_front(numSoftmaxValues)
        .drop_back(AccumulatorTile::kRowsPerLane);
  }
  MutableArrayRef<Value> pendingAlphas(MutableArrayRef<Value> values) const {
    return values.take_back(AccumulatorTile::kRowsPerLane);
  }
  /// Without pingpong nothing hides the O rescale after the P V wait: it
  /// waits for the next block, and runs between that block's Q K^T issue
  /// and its P V issue, under the tensor cores' work (FlashAttention-3's
  /// RescaleOBeforeGemm, which it takes above D = 128). With pingpong the
  /// other consumer's GEMMs hide it, and it stays off the turn.
  bool rescaleFirst() const { return !cfg.pingpong(); }
  /// O times the pending factors, when rescaleFirst().
  void rescalePending(MutableArrayRef<Value> values);
  /// Block 0: S, its softmax and P (the masked form: right for any block).
  void firstBlock(MutableArrayRef<Value> values);
  /// Block j > 0: S_j and P_{j-1} V_{j-1} overlapped with the softmax of j.
  void nextBlock(Value block, bool masked, MutableArrayRef<Value> values);
  /// The last block's P V.
  void lastValues(Value block, MutableArrayRef<Value> values);
  /// When `block` is the tile's last: scales its P (`scores`, after the
  /// softmax, before rounding) and O's factors `alphas` by
  /// normalizedRowScale(), so that O leaves the loop divided by l (the
  /// epilogue's multiplication per element, done here on the block's
  /// fewer P elements). l itself stays as it is (the log-sum-exp reads it).
  void normalizeLast(Value block, AccumulatorTile scores, SoftmaxState state,
                     MutableArrayRef<Value> alphas);
  /// Runs `body` on a copy of `values` when the tile has key blocks;
  /// returns the values after it.
  SmallVector<Value>
  ifAnyBlock(ValueRange values,
             function_ref<void(MutableArrayRef<Value>)> body);
  void release(KeyValue which, Value block);
  /// The pipeline's count of the tile's block `block`.
  Value slot(Value block) { return blockBase ? add(block, blockBase) : block; }
  /// Runs `body` where `cond` holds.
  void when(Value cond, function_ref<void()> body);
  void setMaxRegisters(int64_t registers, NVVM::SetMaxRegisterAction action);
  /// Where warp `warp` (of the consumers') of consumer `consumer` stages
  /// its output rows (FlashKernelConfig::stagesOutput), after a barrier of
  /// its warpgroup.
  Value stagingRows(Value consumer, Value warp);
  /// `index` as lane 0 has it (a shuffle of `type`, i32 by default):
  /// uniform to ptxas. `result`: its type (index by default).
  Value fromLaneZero(Value index, Type type = {}, Type result = {});
  /// A copy of `index` (in i32) that LLVM does not see through: what
  /// derives from it is computed where it is used, not kept in registers
  /// from an earlier computation of the same.
  Value fresh(Value index);

  const FlashKernelConfig &cfg;
  LaneLayout lanes;
  std::optional<WgmmaAtom> atom;
  std::optional<TmaPipeline> pipeline;
  std::optional<KeyBlockRange> range;
  std::optional<Pingpong> turns;
  /// The warp's first query row in the sequence.
  Value warpRow;
  Value queryDescriptor;
  /// The descriptors of the K and V tiles of stage 0.
  Value keyDescriptor, valueDescriptor;
  Value laneZero;
  /// The consumers' count of key blocks before the tile's (null: 0):
  /// block j of the tile goes through the pipeline as blockBase + j.
  Value blockBase;
  /// The persistent kernel's gate barrier of the warp (prepareConsumer).
  Value tileGateBarrier;
  int64_t numSoftmaxValues = 0;
};
} // namespace

void WgmmaFlashKernel::when(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, cond);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  body();
}

void WgmmaFlashKernel::setMaxRegisters(int64_t registers,
                                       NVVM::SetMaxRegisterAction action) {
  NVVM::SetMaxRegisterOp::create(b, loc, static_cast<uint32_t>(registers),
                                 action);
}

Value WgmmaFlashKernel::issueScores(Value block) {
  Value keys =
      atom->stageDescriptor(keyDescriptor, pipeline->stageOf(slot(block)),
                            pipeline->stageBytes(KeyValue::Key));
  return atom->issueKeys(queryDescriptor, cfg.queryBlock(), keys, cfg.headDim,
                         cfg.keyBlock);
}

/// `value` (f32 or i32), through a move LLVM must keep below the side
/// effects before it (a volatile inline asm): what derives from it cannot
/// be hoisted above them, nor taken from an earlier computation of the
/// same.
static Value pinned(OpBuilder &b, Location loc, Value value) {
  StringRef constraints = isa<FloatType>(value.getType()) ? "=f,f" : "=r,r";
  return inlinePtx(b, loc, value.getType(), value, "mov.b32 $0, $1;",
                   constraints, /*sideEffects=*/true);
}

void WgmmaFlashKernel::rescalePending(MutableArrayRef<Value> values) {
  if (!rescaleFirst())
    return;
  // The multiplications are the same in the masked and the unmasked loop
  // body, and LLVM would hoist them above Q K^T's issue; pinned below V's
  // wait (a try-wait loop: a block boundary ptxas schedules within), they
  // stay between the two issues in the SASS as well.
  for (auto [half, alpha] : llvm::enumerate(pendingAlphas(values)))
    rescaleRow(*this, softmaxState(values).out(), half, pinned(b, loc, alpha));
}

SmallVector<Value>
WgmmaFlashKernel::issueValues(Value block, MutableArrayRef<Value> values) {
  pipeline->waitFull(KeyValue::Value, slot(block));
  rescalePending(values);
  Value descriptor =
      atom->stageDescriptor(valueDescriptor, pipeline->stageOf(slot(block)),
                            pipeline->stageBytes(KeyValue::Value));
  return atom->issueValues(softmaxState(values).out().values(),
                           probabilities(values), descriptor, cfg.keyBlock);
}

void WgmmaFlashKernel::finishValues(Value block, ArrayRef<Value> out,
                                    MutableArrayRef<Value> values) {
  atom->wait(0);
  release(KeyValue::Value, block);
  llvm::copy(out, softmaxState(values).out().values().begin());
}

void WgmmaFlashKernel::release(KeyValue which, Value block) {
  // Every warp's wgmmas have completed: one arrival per warp.
  when(laneZero, [&] { pipeline->release(which, slot(block)); });
}

void WgmmaFlashKernel::firstBlock(MutableArrayRef<Value> values) {
  Value block = idx(0);
  pipeline->waitFull(KeyValue::Key, slot(block));
  turns->start();
  turns->waitTurn();
  Value acc = issueScores(block);
  turns->passTurn();
  atom->wait(0);
  release(KeyValue::Key, block);
  SmallVector<Value> scoreRegisters = atom->unpack(acc);
  AccumulatorTile scores(scoreRegisters);
  // O is 0: nothing to rescale.
  softmaxStep(*this, lanes, *range, warpRow, block, cfg.keyBlock, cfg.scale,
              /*masked=*/true, scores, softmaxState(values),
              /*fast=*/true, /*rescaleOut=*/false,
              /*relativeMask=*/true);
  normalizeLast(block, scores, softmaxState(values), {});
  llvm::copy(atom->probabilityFragments(scores, cfg.keyBlock),
             probabilities(values).begin());
}

void WgmmaFlashKernel::nextBlock(Value block, bool masked,
                                 MutableArrayRef<Value> values) {
  SoftmaxState state = softmaxState(values);
  Value previous = sub(block, 1);
  turns->waitTurn();
  Value acc = issueScores(block);
  SmallVector<Value> out = issueValues(previous, values);
  turns->passTurn();
  // S_j has completed (P V may not have): K_j is free.
  atom->wait(1);
  release(KeyValue::Key, block);
  SmallVector<Value> scoreRegisters = atom->unpack(acc);
  AccumulatorTile scores(scoreRegisters);
  SmallVector<Value, 2> alphas =
      softmaxStep(*this, lanes, *range, warpRow, block, cfg.keyBlock, cfg.scale,
                  masked, scores, state, /*fast=*/true,
                  /*rescaleOut=*/false, /*relativeMask=*/true);
  normalizeLast(block, scores, state, alphas);
  finishValues(previous, out, values);
  if (rescaleFirst())
    llvm::copy(alphas, pendingAlphas(values).begin());
  else
    for (auto [half, alpha] : llvm::enumerate(alphas))
      rescaleRow(*this, state.out(), half, alpha);
  llvm::copy(atom->probabilityFragments(scores, cfg.keyBlock),
             probabilities(values).begin());
}

void WgmmaFlashKernel::normalizeLast(Value block, AccumulatorTile scores,
                                     SoftmaxState state,
                                     MutableArrayRef<Value> alphas) {
  SmallVector<Value> scaled(scores.values());
  llvm::append_range(scaled, alphas);
  SmallVector<Type> types(scaled.size(), b.getF32Type());
  // A branch the other blocks skip (uniform: every lane has the same
  // block), not a select: 40 instructions on one block only.
  // Compared in i32, like the loop's counter (buildKeyLoop's narrow).
  Value last = toI32(sub(range->numBlocks(), 1));
  auto ifOp = scf::IfOp::create(b, loc, types, eq(toI32(block), last),
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    SmallVector<Value> out(scaled);
    AccumulatorTile p(
        MutableArrayRef<Value>(out).take_front(scores.values().size()));
    MutableArrayRef<Value> factors =
        MutableArrayRef<Value>(out).drop_front(scores.values().size());
    for (int64_t half = 0; half < AccumulatorTile::kRowsPerLane; ++half) {
      Value scale = normalizedRowScale(*this, cfg, state, half);
      p.forEachInRow(half,
                     [&](int64_t, int64_t, Value &x) { x = fmul(x, scale); });
      if (!factors.empty())
        factors[half] = fmul(factors[half], scale);
    }
    scf::YieldOp::create(b, loc, out);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, scaled);
  }
  for (auto [i, v] : llvm::enumerate(ifOp.getResults())) {
    if (i < scores.values().size())
      scores.values()[i] = v;
    else
      alphas[i - scores.values().size()] = v;
  }
}

void WgmmaFlashKernel::lastValues(Value block, MutableArrayRef<Value> values) {
  turns->waitTurn();
  SmallVector<Value> out = issueValues(block, values);
  turns->passTurn(/*last=*/true);
  finishValues(block, out, values);
}

SmallVector<Value>
WgmmaFlashKernel::ifAnyBlock(ValueRange values,
                             function_ref<void(MutableArrayRef<Value>)> body) {
  Value first = range->firstBlock() ? range->firstBlock() : idx(0);
  auto ifOp = scf::IfOp::create(b, loc, values.getTypes(),
                                lt(first, range->numBlocks()),
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> updated(values);
  body(updated);
  scf::YieldOp::create(b, loc, updated);
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, values);
  return SmallVector<Value>(ifOp.getResults());
}

void WgmmaFlashKernel::produce(Value rowBase, Value parity) {
  if (!cfg.persistent) {
    pipeline->loadQuery(rowBase);
    Value first = idx(0), step = idx(1);
    auto loop = scf::ForOp::create(b, loc, first, range->numBlocks(), step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    for (KeyValue which : {KeyValue::Key, KeyValue::Value}) {
      pipeline->waitEmpty(which, j);
      pipeline->load(which, j, j);
    }
    return;
  }
  // Blocks count on from the earlier tiles' (KeyBlockRange::countFrom).
  Value first = range->firstBlock(), end = range->numBlocks();
  auto loadKey = [&](Value j) {
    pipeline->waitEmpty(KeyValue::Key, j);
    pipeline->load(KeyValue::Key, j, range->local(*this, j));
  };
  // K of the first block, then Q: the consumers may still be reading the
  // previous tile's Q (its last blocks, or the staged epilogue's rows),
  // not its K/V stages.
  when(lt(first, end), [&] { loadKey(first); });
  pipeline->waitQueryEmpty(parity);
  pipeline->loadQuery(rowBase);
  auto loop = scf::ForOp::create(b, loc, first, end, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  pipeline->waitEmpty(KeyValue::Value, j);
  pipeline->load(KeyValue::Value, j, range->local(*this, j));
  Value next = add(j, 1);
  when(lt(next, end), [&] { loadKey(next); });
}

void WgmmaFlashKernel::prepareLanes(Value thread) {
  // Threads, warps and rows counted from the first consumer's.
  lanes = LaneLayout::build(*this, sub(thread, 128));
}

void WgmmaFlashKernel::prepareConsumer(Value consumer) {
  // The consumer's 64 rows of the Q tile start 64 x 128 bytes further into
  // each column atom: a whole number of swizzle atoms.
  Value queryTile = pipeline->queryTile();
  Value offset = arith::IndexCastOp::create(
      b, loc, b.getI32Type(), mul(consumer, WgmmaAtom::kM * kSwizzleSpanBytes));
  Value rows = LLVM::GEPOp::create(b, loc, queryTile.getType(), b.getI8Type(),
                                   queryTile, ValueRange{offset});
  queryDescriptor = atom->kMajorDescriptor(rows);
  // Stage 0's K and V descriptors: a block's are these plus its stage's
  // offset (WgmmaAtom::stageDescriptor).
  keyDescriptor = atom->kMajorDescriptor(pipeline->keyTile(idx(0)));
  valueDescriptor =
      atom->nMajorDescriptor(pipeline->valueTile(idx(0)), cfg.keyBlock);

  laneZero = eq(lanes.lane, idx(0));
  turns.emplace(b, loc, consumer, cfg.pingpong());
  // The persistent kernel's gate barrier before the tile loop: computed in
  // the tile's epilogue, after lane 0's branches, its address is one ptxas
  // does not take as uniform, nor the wait's result, and it takes the tile
  // loop as divergent (see forEachTile; D 256 causal 6.35 instructions per
  // key and 84 bytes of spills, 6.00 and 32 from here).
  if (cfg.persistent && cfg.stagesGate())
    tileGateBarrier = pipeline->gateBarrier(fromLaneZero(lanes.warp));
}

void WgmmaFlashKernel::releaseQuery() {
  when(laneZero, [&] { pipeline->releaseQuery(); });
}

void WgmmaFlashKernel::consume(Value thread, Value consumer, Value rowBase,
                               Value parity,
                               function_ref<EpilogueOperands()> epilogue) {
  // A kernel of one tile prepares here, in the order it always had.
  if (!cfg.persistent)
    prepareLanes(thread);
  warpRow = add(rowBase, mul(lanes.warp, 16));
  // The persistent kernel's consumers wait for the tile's Q at the end of
  // the previous one (forEachTile).
  if (!cfg.persistent)
    pipeline->waitQuery(parity);
  if (!cfg.persistent)
    prepareConsumer(consumer);
  SmallVector<Value> init = SoftmaxState::init(*this, cfg.valueHeadDim);
  numSoftmaxValues = init.size();
  init.append(cfg.keyBlock / 4,
              arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
  // O is 0 until block 0's P V: any factor leaves it so.
  init.append(AccumulatorTile::kRowsPerLane, f32c(1.0));
  SmallVector<Value> state =
      ifAnyBlock(init, [&](MutableArrayRef<Value> v) { firstBlock(v); });
  state = buildKeyLoop(
      *this, *range, state,
      [&](Value j) { pipeline->waitFull(KeyValue::Key, slot(j)); },
      [&](Value j, bool masked, MutableArrayRef<Value> values) {
        nextBlock(j, masked, values);
      },
      /*first=*/1, /*narrow=*/true);
  state = ifAnyBlock(state, [&](MutableArrayRef<Value> v) {
    lastValues(sub(range->numBlocks(), 1), v);
  });
  // Every wgmma that reads Q has completed (the last P V waited for S too):
  // the producer may load the next tile's Q, unless the epilogue stages
  // its rows in Q's.
  bool persistent = cfg.persistent;
  if (persistent && !cfg.stagesOutput())
    releaseQuery();
  // The gate's and the output's slabs only now: no register carries them
  // through the loop.
  EpilogueOperands operands = epilogue();
  Value row0 = warpRow;
  if (cfg.stagesOutput()) {
    // The warp's rows, staging rows and gate barrier from a warp index
    // ptxas knows to be uniform: the bulk copies take uniform registers,
    // and would otherwise be issued in a loop over the lanes' values.
    Value warp = fromLaneZero(lanes.warp);
    row0 = fromLaneZero(warpRow);
    operands.staging = stagingRows(consumer, warp);
    if (cfg.stagesGate()) {
      operands.gateBarrier =
          persistent ? tileGateBarrier : pipeline->gateBarrier(warp);
      if (persistent)
        operands.gateParity = parity;
    }
  }
  emitGatedEpilogue(*this, cfg, lanes, softmaxState(state), row0, operands,
                    /*fast=*/true);
  // The bulk store has read the staged rows (its wait_group.read).
  if (persistent && cfg.stagesOutput())
    releaseQuery();
}

Value WgmmaFlashKernel::fromLaneZero(Value index, Type type, Type result) {
  if (!type)
    type = b.getI32Type();
  if (!result)
    result = b.getIndexType();
  Value narrow = index;
  if (index.getType() != type)
    narrow = arith::IndexCastOp::create(b, loc, type, index);
  Value shuffled =
      gpu::ShuffleOp::create(b, loc, narrow, 0, 32, gpu::ShuffleMode::IDX)
          .getShuffleResult();
  if (result == type)
    return shuffled;
  return arith::IndexCastOp::create(b, loc, result, shuffled);
}

Value WgmmaFlashKernel::stagingRows(Value consumer, Value warp) {
  // The consumer's Q rows are free once every one of its warps has waited
  // for its last wgmma (each read all 64 rows): a barrier of the
  // warpgroup's 128 threads, ids after Pingpong's.
  Value id = toI32(add(div(warp, 4), 3));
  Value threads = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(128));
  NVVM::BarrierOp::create(b, loc, /*res=*/Type(), id, threads,
                          /*reductionOp=*/nullptr,
                          /*reductionPredicate=*/Value());
  // Those rows are 64-row blocks of 128 bytes (one per column atom), 8 KiB
  // each, the CTA's 128 rows apart; a warp's 16 output rows (16 x 2 Dv
  // bytes: 2, 4 or 8 KiB) lie within one.
  constexpr int64_t blockBytes = WgmmaAtom::kM * kSwizzleSpanBytes;
  int64_t warpBytes = 16 * cfg.valueHeadDim * cfg.elementBytes();
  Value offset = mul(rem(warp, 4), warpBytes);
  Value bytes = add(
      add(mul(div(offset, blockBytes), cfg.queryBlock() * kSwizzleSpanBytes),
          mul(div(warp, 4), blockBytes)),
      rem(offset, blockBytes));
  Value queryTile = pipeline->queryTile();
  return LLVM::GEPOp::create(b, loc, queryTile.getType(), b.getI8Type(),
                             queryTile, ValueRange{toI32(bytes)});
}

void WgmmaFlashKernel::build(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // Read from lane 0, so that ptxas knows the warpgroup index to be
  // uniform and keeps what derives from it (the Q descriptor, the barrier
  // ids) in uniform registers.
  Value warpgroup = fromLaneZero(div(thread, 128));
  atom.emplace(b, loc, cfg.elementType);
  if (cfg.isPaged())
    buildPaged(entry, thread, warpgroup);
  else
    buildDense(entry, thread, warpgroup);
  gpu::ReturnOp::create(b, loc);
}

Value WgmmaFlashKernel::fresh(Value index) {
  Value narrow = toI32(index);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                    pinned(b, loc, narrow));
}

void WgmmaFlashKernel::buildDense(Block &entry, Value thread, Value warpgroup) {
  KernelArguments args(cfg, entry);
  Value numRows = args["Sq"], numKeys = args["Skv"];
  int64_t rows = cfg.queryBlock();
  // One tile per CTA (scheduleTile), or (cfg.persistent) a loop over them.
  std::optional<TileSequence> tiles;
  FlashTile tile;
  Value tileIndex;
  if (cfg.persistent)
    tiles.emplace(rows, cfg.numQueryHeads, args["B"]);
  else
    tile = scheduleTile(*this, rows);
  auto epilogue = [&] {
    // The persistent kernel's tile again from its index (a copy LLVM does
    // not see through), as the one-tile kernel reads the block ids again:
    // values the key loop would otherwise carry.
    if (tiles) {
      Value slab;
      tile = tiles->tile(*this, fresh(tileIndex), fresh(numRows), slab);
    }
    Value gateHead = cfg.numGateHeads == 1 ? idx(0) : tile.head;
    OperandStrides gateStrides = args.strides(*this, "gate");
    OperandStrides outStrides = args.strides(*this, "out");
    EpilogueOperands operands{args["gate"],
                              args["out"],
                              tile.slabOffset(*this, gateHead, gateStrides),
                              tile.slabOffset(*this, tile.head, outStrides),
                              numRows,
                              gateStrides.row,
                              outStrides.row};
    if (cfg.lse) {
      operands.lse = args["lse"];
      // (b Hq + h) Sq as b (Hq Sq) + h Sq, like the slab offsets above:
      // from the block ids alone, which ptxas reads again after the loop,
      // where the product b Hq + h of the Q slab would be kept through it
      // (at D 256 it spilled).
      operands.lseBase = add(mul(tile.batch, mul(numRows, cfg.numQueryHeads)),
                             mul(tile.head, numRows));
    }
    return operands;
  };
  // Slabs: the TMA maps are 3-D (D, S, B x H).
  auto slabs = [&](Value querySlab) {
    Value kvHead = div(tile.head, cfg.groupSize());
    return TmaBoxes{args["q"], args["k"], args["v"], querySlab,
                    tile.slab(*this, kvHead, cfg.numKeyValueHeads)};
  };

  if (!cfg.persistent) {
    pipeline.emplace(b, loc, cfg,
                     slabs(tile.slab(*this, tile.head, cfg.numQueryHeads)));
    range.emplace(*this, cfg.causal, cfg.keyBlock, tile.rowBase, rows, numRows,
                  numKeys);
    auto once = [&](bool, TileBody body) {
      body(tile.rowBase,
           arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
    };
    runRoles(thread, warpgroup, once, epilogue);
    return;
  }
  // The slabs are the tile's (setSlabs).
  pipeline.emplace(b, loc, cfg,
                   TmaBoxes{args["q"], args["k"], args["v"], Value(), Value()});
  // Each role walks the CTA's tiles, carrying the key blocks that went
  // through the pipeline before the tile and the tile's parity.
  auto forEachTile = [&](bool producer, TileBody body) {
    OpBuilder::InsertionGuard guard(b);
    Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
    Value step = TileSequence::numCTAs(
        *this, gpu::GridDimOp::create(b, loc, gpu::Dimension::x),
        gpu::GridDimOp::create(b, loc, gpu::Dimension::y),
        gpu::GridDimOp::create(b, loc, gpu::Dimension::z));
    // The consumers wait for each tile's Q before the tile loop's test,
    // not at the head of its body: with a try-wait loop there, ptxas takes
    // the whole tile loop as divergent, wraps it and everything in it in
    // convergence barriers and moves the key loop's counter, phases and
    // descriptors out of the uniform registers (D 128: 3.62 instructions
    // per key against 3.37 for the one-tile kernel). The first tile's here;
    // each next tile's at the end of the previous one, the producer
    // completing one more phase after the last tile (endQueries).
    if (!producer)
      pipeline->waitQuery(zero);
    // The tile index and the block count in i32 (both far below 2^31): the
    // producer's loop in its 24 registers spilled 28-52 bytes at D 128
    // with them in i64, 16-20 with the index in i32.
    Value first32 = toI32(TileSequence::firstTile(*this));
    Value end32 = toI32(tiles->numTiles(*this, numRows));
    Value step32 = toI32(step);
    auto loop = scf::ForOp::create(b, loc, first32, end32, step32,
                                   ValueRange{zero, zero});
    if (producer) {
      OpBuilder::InsertionGuard after(b);
      b.setInsertionPointAfter(loop);
      pipeline->endQueries(loop.getResult(1));
    }
    b.setInsertionPointToStart(loop.getBody());
    Value t = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                         loop.getInductionVar());
    Value blocks = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                              loop.getRegionIterArg(0));
    Value parity = loop.getRegionIterArg(1);
    tileIndex = t;
    Value querySlab;
    tile = tiles->tile(*this, t, numRows, querySlab);
    // The consumers' first row and block count as lane 0 has them: the
    // tile's decoding divides on the vector path, and ptxas would not know
    // the key loop's bounds, the blocks' stages and phases or the
    // descriptors to be uniform (one tile: 6.03 instructions per key at
    // D 256 causal without, 5.79 with). (The TMA producer is one thread.)
    if (!producer) {
      tile.rowBase = fromLaneZero(tile.rowBase);
      blocks = fromLaneZero(blocks);
    }
    TmaBoxes boxes = slabs(querySlab);
    pipeline->setSlabs(boxes.querySlab, boxes.keySlab);
    range.emplace(*this, cfg.causal, cfg.keyBlock, tile.rowBase, rows, numRows,
                  numKeys);
    // The producer numbers the blocks on from the earlier tiles'; the
    // consumers count the tile's own from 0, adding blockBase for the
    // pipeline (a key loop from a constant, as in the one-tile kernel).
    if (producer)
      range->countFrom(*this, blocks);
    else
      blockBase = blocks;
    body(tile.rowBase, parity);
    Value one = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1));
    Value flipped = arith::XOrIOp::create(b, loc, parity, one);
    if (!producer)
      pipeline->waitQuery(flipped);
    Value done =
        producer ? range->numBlocks() : add(blockBase, range->numBlocks());
    scf::YieldOp::create(b, loc, ValueRange{toI32(done), flipped});
  };
  runRoles(thread, warpgroup, forEachTile, epilogue);
}

void WgmmaFlashKernel::buildPaged(Block &entry, Value thread, Value warpgroup) {
  VarlenTile t = PagedTile::schedule(*this, cfg, entry);
  // The CTAs past the sequence's last block have nothing to do (uniform:
  // the barriers inside stay CTA-wide).
  auto active = scf::IfOp::create(b, loc, t.active);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(active.thenBlock());
  pipeline.emplace(b, loc, cfg);
  // Each role derives its operands after its setmaxnreg: only the tile's
  // schedule lives across the split of the register file. One tile.
  std::optional<PagedTile> paged;
  auto forEachTile = [&](bool producer, TileBody body) {
    paged.emplace(*this, cfg, entry, t);
    range.emplace(*this, cfg.causal, cfg.keyBlock, t.tile.rowBase,
                  cfg.queriesPerBlock(), t.numRows, paged->numKeys,
                  cfg.rowGroup());
    if (producer)
      pipeline->setRowCopies(RowCopies{paged->query, paged->key, paged->value,
                                       t.numRows, paged->numKeys, thread});
    body(paged->packedRowBase(),
         arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
  };
  runRoles(thread, warpgroup, forEachTile,
           [&] { return paged->gatedEpilogue(); });
}

void WgmmaFlashKernel::runRoles(Value thread, Value warpgroup,
                                ForEachTile forEachTile,
                                function_ref<EpilogueOperands()> epilogue) {
  pipeline->initBarriers(eq(thread, idx(0)));
  // setmaxnreg is warpgroup-wide: the branch is uniform per warpgroup.
  auto roles = scf::IfOp::create(b, loc, eq(warpgroup, idx(0)),
                                 /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(roles.thenBlock());
  setMaxRegisters(cfg.producerRegisters(),
                  NVVM::SetMaxRegisterAction::decrease);
  auto produceAll = [&] {
    forEachTile(/*producer=*/true,
                [&](Value rowBase, Value parity) { produce(rowBase, parity); });
  };
  if (cfg.copiesRows())
    produceAll();
  else
    when(eq(thread, idx(0)), produceAll);
  b.setInsertionPointToStart(roles.elseBlock());
  Value consumer = sub(warpgroup, 1);
  setMaxRegisters(cfg.consumerRegisters(),
                  NVVM::SetMaxRegisterAction::increase);
  // What the tiles share, once before them.
  if (cfg.persistent) {
    prepareLanes(thread);
    prepareConsumer(consumer);
  }
  forEachTile(/*producer=*/false, [&](Value rowBase, Value parity) {
    consume(thread, consumer, rowBase, parity, epilogue);
  });
}

void mlir::gated_attention::flash::buildWgmmaFlashKernel(
    OpBuilder &b, Location loc, const FlashKernelConfig &cfg,
    gpu::GPUFuncOp func) {
  WgmmaFlashKernel(b, loc, cfg).build(func);
}
