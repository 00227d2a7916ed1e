//===- TileScheduler.cpp - which tile a CTA computes, which keys ----------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "TileScheduler.h"
#include "GatedAttention/Dialect/GatedAttention/IR/AttentionMath.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention;
using namespace mlir::gated_attention::flash;

FlashTile mlir::gated_attention::flash::scheduleTile(const KernelBuilder &kb,
                                                     int64_t rows) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value gridX = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value blockX = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value queryBlock = kb.sub(kb.sub(gridX, kb.idx(1)), blockX);
  FlashTile tile;
  tile.head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  tile.batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  tile.rowBase = kb.mul(queryBlock, rows);
  return tile;
}

Value TileSequence::firstTile(const KernelBuilder &kb) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  // Linear over all three dimensions: a launcher's grid of (ceildiv(Sq,
  // rows), Hq, B) is one CTA per tile.
  Value gridX = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value gridY = gpu::GridDimOp::create(b, loc, gpu::Dimension::y);
  Value x = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value y = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value z = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  return kb.add(x, kb.mul(gridX, kb.add(y, kb.mul(gridY, z))));
}

Value TileSequence::numCTAs(const KernelBuilder &kb, Value x, Value y,
                            Value z) {
  return kb.mul(kb.mul(x, y), z);
}

Value TileSequence::numTiles(const KernelBuilder &kb, Value numRows) const {
  Value blocks = arith::CeilDivUIOp::create(kb.builder(), kb.location(),
                                            numRows, kb.idx(rows));
  return kb.mul(blocks, kb.mul(batches, heads));
}

FlashTile TileSequence::tile(const KernelBuilder &kb, Value t, Value numRows,
                             Value &slab) const {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value slabs = kb.mul(batches, heads);
  Value blocks = arith::CeilDivUIOp::create(b, loc, numRows, kb.idx(rows));
  // Divided in i32 (tiles are far below 2^31): a 64-bit division is a call
  // in the SASS, after which ptxas no longer knows the warp to be
  // converged, and what follows in the tile leaves the uniform registers.
  auto index = [&](Value narrow) -> Value {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), narrow);
  };
  Value t32 = kb.toI32(t), slabs32 = kb.toI32(slabs);
  FlashTile tile;
  slab = index(arith::RemUIOp::create(b, loc, t32, slabs32));
  Value block = index(arith::DivUIOp::create(b, loc, t32, slabs32));
  tile.batch = kb.div(slab, heads);
  tile.head = kb.rem(slab, heads);
  tile.rowBase = kb.mul(kb.sub(kb.sub(blocks, 1), block), rows);
  return tile;
}

VarlenTile mlir::gated_attention::flash::scheduleVarlenTile(
    const KernelBuilder &kb, int64_t rows, Value cuSeqlens, Value numSeqs) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value x = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  auto cuAt = [&](OpBuilder &nb, Location l, Value c) {
    return KernelBuilder(nb, l).loadIndex(cuSeqlens, c);
  };
  auto firstBlock = [&](Value c) {
    return buildVarlenFirstTile(b, loc, cuAt(b, loc, c), c, rows);
  };
  VarlenTile t;
  t.tile.batch = buildVarlenTileSequence(b, loc, x, numSeqs, rows, cuAt);
  t.tile.head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  t.firstRow = kb.loadIndex(cuSeqlens, t.tile.batch);
  t.numRows =
      kb.sub(kb.loadIndex(cuSeqlens, kb.add(t.tile.batch, 1)), t.firstRow);
  Value blocks = arith::CeilDivUIOp::create(b, loc, t.numRows, kb.idx(rows));
  Value local = kb.sub(x, firstBlock(t.tile.batch));
  t.active = kb.lt(local, blocks);
  t.tile.rowBase = kb.mul(kb.sub(kb.sub(blocks, 1), local), rows);
  return t;
}

KeyBlockRange::KeyBlockRange(const KernelBuilder &kb, bool causal,
                             int64_t keyBlock, Value rowBase, int64_t rows,
                             Value numRows, Value numKeys, int64_t rowGroup)
    : causal(causal), keyBlock(keyBlock), rowGroup(rowGroup), numKeys(numKeys) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value keyEnd = numKeys;
  offset = buildCausalOffset(b, loc, numKeys, numRows);
  if (causal) {
    // The bound of the tile's last row, rowBase + rows - 1
    // (buildCausalKeyBound), summed so as to keep the kernel's PTX as it was.
    Value end = kb.add(kb.add(rowBase, rows), offset);
    keyEnd = kb.min(arith::MaxSIOp::create(b, loc, end, kb.idx(0)), numKeys);
  }
  blocks = arith::CeilDivSIOp::create(b, loc, keyEnd, kb.idx(keyBlock));
  // Blocks that end at or before this bound need no mask: every key exists
  // and (causal) is visible to the tile's first row.
  unmaskedEnd = numKeys;
  if (causal)
    unmaskedEnd = kb.min(kb.add(kb.add(rowBase, 1), offset), numKeys);
}

void KeyBlockRange::splitAcross(const KernelBuilder &kb, Value split,
                                Value splits) {
  Value chunk =
      arith::CeilDivUIOp::create(kb.builder(), kb.location(), blocks, splits);
  begin = kb.min(kb.mul(split, chunk), blocks);
  blocks = kb.min(kb.add(begin, chunk), blocks);
}

void KeyBlockRange::countFrom(const KernelBuilder &kb, Value from) {
  assert(!begin && "a split range counts from its split's first block");
  base = from;
  begin = from;
  blocks = kb.add(from, blocks);
  unmaskedEnd = kb.add(unmaskedEnd, kb.mul(from, keyBlock));
}

Value KeyBlockRange::isMasked(const KernelBuilder &kb, Value block) const {
  return arith::CmpIOp::create(kb.builder(), kb.location(),
                               arith::CmpIPredicate::sgt,
                               kb.mul(kb.add(block, 1), keyBlock), unmaskedEnd);
}

Value KeyBlockRange::isMaskedNarrow(const KernelBuilder &kb,
                                    Value block) const {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  Value next = arith::AddIOp::create(b, loc, block, i32(1));
  Value end = arith::MulIOp::create(b, loc, next, i32(keyBlock));
  Value bound = kb.toI32(unmaskedEnd);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, end, bound);
}

Value KeyBlockRange::keyLimit(const KernelBuilder &kb, Value row) const {
  if (!causal)
    return numKeys;
  if (rowGroup > 1)
    row = kb.div(row, rowGroup);
  return kb.min(buildCausalKeyBound(kb.builder(), kb.location(), row, offset),
                numKeys);
}

SmallVector<Value> mlir::gated_attention::flash::buildKeyLoop(
    const KernelBuilder &kb, const KeyBlockRange &range, ValueRange init,
    function_ref<void(Value)> begin,
    function_ref<void(Value, bool, MutableArrayRef<Value>)> step, int64_t first,
    bool narrow) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value lower = kb.idx(first);
  if (Value begin = range.firstBlock())
    lower = kb.add(begin, first);
  Value upper = range.numBlocks(), one = kb.idx(1);
  if (narrow) {
    lower = kb.toI32(lower);
    upper = kb.toI32(upper);
    one = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1));
  }
  auto loop = scf::ForOp::create(b, loc, lower, upper, one, init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value counter = loop.getInductionVar();
  Value j = counter;
  if (narrow)
    j = arith::IndexCastOp::create(b, loc, b.getIndexType(), counter);
  begin(j);
  SmallVector<Type> types(init.getTypes());
  Value masked =
      narrow ? range.isMaskedNarrow(kb, counter) : range.isMasked(kb, j);
  auto ifOp = scf::IfOp::create(b, loc, types, masked, true);
  for (bool masked : {true, false}) {
    OpBuilder::InsertionGuard guard2(b);
    b.setInsertionPointToStart(masked ? ifOp.thenBlock() : ifOp.elseBlock());
    SmallVector<Value> state(loop.getRegionIterArgs());
    step(j, masked, state);
    scf::YieldOp::create(b, loc, state);
  }
  scf::YieldOp::create(b, loc, ifOp.getResults());
  return SmallVector<Value>(loop.getResults());
}
