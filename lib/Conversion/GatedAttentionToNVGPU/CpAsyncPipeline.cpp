//===- CpAsyncPipeline.cpp - the sm_80 kernel's copy pipeline -------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "CpAsyncPipeline.h"
#include "SharedMemoryLayout.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

CpAsyncPipeline::CpAsyncPipeline(OpBuilder &b, Location loc,
                                 const FlashKernelConfig &cfg, Value thread,
                                 ChunkSwizzle swizzle)
    : KernelBuilder(b, loc), cfg(cfg), thread(thread), swizzle(swizzle) {}

void CpAsyncPipeline::allocateTiles() {
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), wg));
  auto view = [&](int64_t offset, ArrayRef<int64_t> shape) {
    return memref::ViewOp::create(
        b, loc, MemRefType::get(shape, cfg.elementType, AffineMap(), wg), smem,
        idx(offset), ValueRange{});
  };
  int64_t d = cfg.headDim, dv = cfg.valueHeadDim, bc = cfg.keyBlock;
  auto layout = CpAsyncSharedLayout::get(cfg);
  int64_t stages = CpAsyncSharedLayout::kStages;
  qTile = view(layout.query, {cfg.queryBlock(), d});
  kTiles = view(layout.keys, {stages, bc, d});
  vTiles = view(layout.values, {stages, bc, dv});
}

void CpAsyncPipeline::copyTile(GlobalSlab src, Value row0, Value limit,
                               Value dst, ValueRange prefix, int64_t rows,
                               int64_t width, SmallVectorImpl<Value> &tokens) {
  int64_t chunksPerRow = width / ChunkSwizzle::kChunkElements;
  int64_t threads = cfg.threads();
  int64_t rowsPerPass = threads / chunksPerRow;
  // Threads that a row's chunks divide take a chunk column each and step
  // over rows; otherwise (D = 96 has 12 chunks a row, 128 threads) pass p
  // takes chunks [p x threads, (p + 1) x threads) of the tile, row-major.
  // Either way thread t's chunk of pass p is chunk t + p x threads.
  bool wholeRows = threads % chunksPerRow == 0;
  int64_t chunks = rows * chunksPerRow;
  int64_t passes = llvm::divideCeil(chunks, threads);
  Value threadRow, threadChunk;
  if (wholeRows) {
    threadRow = div(thread, chunksPerRow);
    threadChunk = rem(thread, chunksPerRow);
  }
  Value eight = idx(ChunkSwizzle::kChunkElements), zero = idx(0);
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  for (int64_t pass = 0; pass < passes; ++pass) {
    Value r, chunk = threadChunk;
    if (wholeRows) {
      r = add(threadRow, pass * rowsPerPass);
    } else {
      Value linear = add(thread, pass * threads);
      r = div(linear, chunksPerRow);
      chunk = rem(linear, chunksPerRow);
    }
    // (In this order: the one the digests of mma-sync-ptx.test pin.)
    auto [valid, srcIndex] = slabElement(
        *this, src, add(row0, r), limit,
        [&](Value row, Value valid) {
          if (!src.pages)
            return select(valid, row, zero);
          Value &cached = pagedRows[{chunksPerRow, pass}];
          if (!cached)
            cached = pagedSourceRow(*this, src, row, valid);
          return cached;
        },
        [&] { return mul(chunk, ChunkSwizzle::kChunkElements); });
    SmallVector<Value> dstIndices(prefix);
    dstIndices.push_back(r);
    dstIndices.push_back(swizzle.column(*this, chunk, swizzle.bits(*this, r)));
    Value size = select(valid, eight, zero);
    auto copy = [&] {
      return nvgpu::DeviceAsyncCopyOp::create(
          b, loc, tokenType, dst, dstIndices, src.buffer, ValueRange{srcIndex},
          b.getIndexAttr(ChunkSwizzle::kChunkElements), size, b.getUnitAttr());
    };
    if ((pass + 1) * threads <= chunks) {
      tokens.push_back(copy());
      continue;
    }
    // A last pass the tile's chunks do not fill (the backward's 16-row
    // blocks: 16 x 12 chunks at D = 96): threads past the tile copy
    // nothing, not even zeros, which would land in the next row or tile.
    // The copy's token stays in the branch: cp.async.commit_group commits
    // every copy the thread issued, so the group still holds it.
    auto inTile = scf::IfOp::create(b, loc, lt(r, idx(rows)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inTile.thenBlock());
    (void)copy();
  }
}

std::pair<Value, Value> mlir::gated_attention::flash::slabElement(
    const KernelBuilder &kb, const GlobalSlab &src, Value row, Value limit,
    function_ref<Value(Value, Value)> physical, function_ref<Value()> column) {
  Value groupOffset;
  if (src.rowGroup > 1) {
    if (src.groupStride)
      groupOffset = kb.mul(kb.rem(row, src.rowGroup), src.groupStride);
    row = kb.div(row, src.rowGroup);
  }
  Value valid = src.narrowRows ? kb.lt(kb.toI32(row), kb.toI32(limit))
                               : kb.lt(row, limit);
  Value srcRow = physical(row, valid);
  Value columnOffset = column();
  Value element = kb.add(src.base, kb.mul(srcRow, src.rowStride));
  if (groupOffset)
    element = kb.add(element, groupOffset);
  return {valid, kb.add(element, columnOffset)};
}

Value mlir::gated_attention::flash::pagedSourceRow(const KernelBuilder &kb,
                                                   const GlobalSlab &src,
                                                   Value row, Value valid) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto ifOp = scf::IfOp::create(b, loc, b.getIndexType(), valid,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  const PageTable &pages = *src.pages;
  Value page = kb.loadIndex(
      pages.table, kb.add(pages.tableBase, kb.div(row, pages.pageSize)));
  // (Separate statements: one order of the ops for every compiler.)
  Value inPage = kb.rem(row, pages.pageSize);
  Value pageStart = kb.mul(page, pages.pageSize);
  scf::YieldOp::create(b, loc, kb.add(pageStart, inPage));
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, kb.idx(0));
  return ifOp.getResult(0);
}

void CpAsyncPipeline::copyKeyBlock(Value block, Value buffer, Value limit,
                                   GlobalSlab k, GlobalSlab v,
                                   SmallVectorImpl<Value> &tokens) {
  pagedRows.clear();
  Value key0 = mul(block, cfg.keyBlock);
  copyTile(k, key0, limit, kTiles, {buffer}, cfg.keyBlock, cfg.headDim, tokens);
  copyTile(v, key0, limit, vTiles, {buffer}, cfg.keyBlock, cfg.valueHeadDim,
           tokens);
}

Value CpAsyncPipeline::commit(ValueRange tokens) {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType, tokens)
      .getResult();
}

Value CpAsyncPipeline::loadFirst(GlobalSlab q, Value rowBase, Value numRows,
                                 GlobalSlab k, GlobalSlab v, Value numKeys,
                                 Value firstBlock) {
  SmallVector<Value> tokens;
  copyTile(q, rowBase, numRows, qTile, {}, cfg.queryBlock(), cfg.headDim,
           tokens);
  if (firstBlock) {
    Value buffer = arith::AndIOp::create(b, loc, firstBlock, idx(1));
    copyKeyBlock(firstBlock, buffer, numKeys, k, v, tokens);
  } else {
    Value zero = idx(0);
    copyKeyBlock(zero, zero, numKeys, k, v, tokens);
  }
  return commit(tokens);
}

void CpAsyncPipeline::waitAll(Value group) {
  nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b, loc);
}

void CpAsyncPipeline::advance(Value block, Value buffer, Value numBlocks,
                              GlobalSlab k, GlobalSlab v, Value numKeys) {
  gpu::BarrierOp::create(b, loc);
  Value next = add(block, 1);
  Value nextLimit = select(lt(next, numBlocks), numKeys, idx(0));
  SmallVector<Value> tokens;
  copyKeyBlock(next, arith::XOrIOp::create(b, loc, buffer, idx(1)), nextLimit,
               k, v, tokens);
  Value group = commit(tokens);
  // Block + 1's group may stay in flight; block's must have landed.
  nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(1));
  gpu::BarrierOp::create(b, loc);
}
