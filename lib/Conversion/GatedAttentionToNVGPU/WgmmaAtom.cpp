//===- WgmmaAtom.cpp - wgmma.mma_async and its descriptors ----------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "WgmmaAtom.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

Value mlir::gated_attention::flash::swizzledChunkOffset(const KernelBuilder &kb,
                                                        Value row, Value chunk,
                                                        int64_t rows) {
  constexpr int64_t chunksPerSpan = kSwizzleSpanBytes / 16;
  Value atom = kb.mul(kb.div(chunk, chunksPerSpan), rows * kSwizzleSpanBytes);
  Value rowBytes = kb.mul(row, kSwizzleSpanBytes);
  Value column = kb.rem(chunk, chunksPerSpan);
  Value phase = kb.rem(row, 8);
  Value swizzled =
      arith::XOrIOp::create(kb.builder(), kb.location(), column, phase)
          .getResult();
  Value chunkBytes = kb.mul(swizzled, 16);
  Value rowStart = kb.add(atom, rowBytes);
  return kb.add(rowStart, chunkBytes);
}

Value mlir::gated_attention::flash::uniformWarpgroup(const KernelBuilder &kb,
                                                     Value thread) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value warpgroup = kb.toI32(kb.div(thread, 128));
  Value uniform =
      gpu::ShuffleOp::create(b, loc, warpgroup, 0, 32, gpu::ShuffleMode::IDX)
          .getShuffleResult();
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), uniform);
}

Type WgmmaAtom::structType(int64_t registers) {
  return LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(registers, b.getF32Type()));
}

/// The start-address bits of a descriptor: (address mod 2^18) >> 4.
static Value addressBits(OpBuilder &b, Location loc, Value tile) {
  auto i64 = b.getI64Type();
  Value address = LLVM::PtrToIntOp::create(b, loc, i64, tile);
  Value masked = LLVM::AndOp::create(
      b, loc, address,
      LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0x3FFFF)));
  return LLVM::LShrOp::create(
      b, loc, masked,
      LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(4)));
}

static Value withBits(OpBuilder &b, Location loc, Value address,
                      uint64_t bits) {
  auto i64 = b.getI64Type();
  return LLVM::OrOp::create(
      b, loc, address,
      LLVM::ConstantOp::create(
          b, loc, i64, b.getI64IntegerAttr(static_cast<int64_t>(bits))));
}

Value WgmmaAtom::kMajorDescriptor(Value tile) {
  // The leading offset is unused for K-major swizzled operands (1, as
  // CUTLASS sets it).
  return withBits(b, loc, addressBits(b, loc, tile),
                  wgmmaDescriptorBits(16, 1024));
}

Value WgmmaAtom::nMajorDescriptor(Value tile, int64_t rows) {
  return withBits(b, loc, addressBits(b, loc, tile),
                  wgmmaDescriptorBits(rows * kSwizzleSpanBytes, 1024));
}

Value WgmmaAtom::advance(Value descriptor, int64_t bytes) {
  if (!bytes)
    return descriptor;
  auto i64 = b.getI64Type();
  return LLVM::AddOp::create(
      b, loc, descriptor,
      LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(bytes >> 4)));
}

Value mlir::gated_attention::flash::inlinePtx(OpBuilder &b, Location loc,
                                              Type type, ValueRange operands,
                                              StringRef text,
                                              StringRef constraints,
                                              bool sideEffects) {
  return LLVM::InlineAsmOp::create(
             b, loc, type, operands, b.getStringAttr(text),
             b.getStringAttr(constraints),
             sideEffects ? b.getUnitAttr() : nullptr,
             /*is_align_stack=*/nullptr,
             LLVM::TailCallKindAttr::get(b.getContext(),
                                         LLVM::TailCallKind::None),
             LLVM::AsmDialectAttr::get(b.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             /*operand_attrs=*/nullptr)
      .getResult(0);
}

/// `descriptor` advanced by `bytes` in its low word alone (start address
/// and leading offset, bits 0-13 and 16-29; no carry into the high word),
/// the words joined by a mov.b64 that LLVM cannot fold back into a 64-bit
/// add: the steps of one GEMM then share one high word.
static Value advanceLowWord(OpBuilder &b, Location loc, Value descriptor,
                            int64_t bytes) {
  auto i32 = b.getI32Type();
  auto i64 = b.getI64Type();
  auto constant = [&](Type type, int64_t v) {
    return LLVM::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
  };
  Value low = LLVM::AddOp::create(
      b, loc, LLVM::TruncOp::create(b, loc, i32, descriptor),
      constant(i32, bytes >> 4));
  Value high = LLVM::TruncOp::create(
      b, loc, i32, LLVM::LShrOp::create(b, loc, descriptor, constant(i64, 32)));
  return inlinePtx(b, loc, i64, ValueRange{low, high}, "mov.b64 $0, {$1, $2};",
                   "=l,r,r", /*sideEffects=*/false);
}

Value WgmmaAtom::stageDescriptor(Value first, Value stage, int64_t stageBytes) {
  auto i32 = b.getI32Type();
  auto i64 = b.getI64Type();
  Value words = arith::MulIOp::create(
      b, loc, arith::IndexCastOp::create(b, loc, i32, stage),
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(stageBytes >> 4)));
  Value low = LLVM::AddOp::create(
      b, loc, LLVM::TruncOp::create(b, loc, i32, first), words);
  Value high = LLVM::TruncOp::create(
      b, loc, i32,
      LLVM::LShrOp::create(
          b, loc, first,
          LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(32))));
  return inlinePtx(b, loc, i64, ValueRange{low, high}, "mov.b64 $0, {$1, $2};",
                   "=l,r,r", /*sideEffects=*/false);
}

void WgmmaAtom::fence() { NVVM::WgmmaFenceAlignedOp::create(b, loc); }

void WgmmaAtom::wait(int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(pending));
}

SmallVector<Value> WgmmaAtom::probabilityFragments(AccumulatorTile p,
                                                   int64_t keys) {
  SmallVector<Value> fragments;
  for (int64_t kk = 0; kk < keys / kK; ++kk)
    llvm::append_range(fragments,
                       probabilityFragment(*this, p, kk, elementType));
  return fragments;
}

SmallVector<Value> WgmmaAtom::unpack(Value acc) {
  auto type = cast<LLVM::LLVMStructType>(acc.getType());
  SmallVector<Value> registers;
  for (int64_t i = 0, e = type.getBody().size(); i < e; ++i)
    registers.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
  return registers;
}

Value WgmmaAtom::issueKeys(Value queryDescriptor, int64_t queryRows,
                           Value keyDescriptor, int64_t headDim, int64_t keys) {
  MLIRContext *ctx = b.getContext();
  Type accType = structType(AccumulatorTile::numRegisters(keys));
  auto type =
      elementType.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  // Q's descriptors are computed before the fence (loop-invariant in a
  // kernel's loop), and the first half of K's; the other half each right
  // before its wgmma, after the fence. ptxas keeps K's in uniform
  // registers: all 16 of D 256 made ahead take more of them than there are
  // (it parked some in vector registers and moved them back every block),
  // all made after the fence left the non-causal D 256 consumers spilling
  // (test/Pipelines/ptxas-wgmma.test); half and half takes neither. (A
  // vector register written between two wgmmas would make ptxas fence each
  // one, C7519; these are uniform.)
  int64_t steps = headDim / kK, ahead = (steps + 1) / 2;
  SmallVector<Value> queryDescriptors, keyDescriptors;
  for (int64_t kk = 0; kk < steps; ++kk)
    queryDescriptors.push_back(
        advance(queryDescriptor, kMajorStepOffset(queryRows, kk)));
  auto keyStep = [&](int64_t kk) {
    return advanceLowWord(b, loc, keyDescriptor, kMajorStepOffset(keys, kk));
  };
  for (int64_t kk = 0; kk < ahead; ++kk)
    keyDescriptors.push_back(keyStep(kk));
  Value acc = LLVM::UndefOp::create(b, loc, accType);
  fence();
  for (int64_t kk = 0; kk < steps; ++kk) {
    if (kk >= ahead)
      keyDescriptors.push_back(keyStep(kk));
    // The first step ignores the (undefined) accumulator.
    auto scaleOut = kk ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero;
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, accType, acc, queryDescriptors[kk], keyDescriptors[kk],
        NVVM::MMAShapeAttr::get(ctx, kM, keys, kK),
        NVVM::WGMMATypesAttr::get(ctx, type),
        NVVM::WGMMATypesAttr::get(ctx, type),
        NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, scaleOut),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        // Both K-major: A row-major, B (K^T) column-major.
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col),
        /*satfinite=*/nullptr);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return acc;
}

SmallVector<Value> WgmmaAtom::issueValues(ArrayRef<Value> out,
                                          ArrayRef<Value> probabilities,
                                          Value valueDescriptor, int64_t keys) {
  int64_t registers = out.size(), n = 2 * registers;
  Type accType = structType(registers);
  // wgmma.mma_async with A in registers: {d...} tied to the inputs, then
  // the four b32 A registers, the B descriptor and scale-d (1: accumulate).
  std::string outs, tied;
  for (int64_t i = 0; i < registers; ++i) {
    outs += llvm::formatv("{0}${1}", i ? ", " : "", i).str();
    tied += llvm::formatv(",{0}", i).str();
  }
  int64_t a = 2 * registers;
  std::string asmString =
      llvm::formatv("{{\n.reg .pred p;\nsetp.ne.b32 p, ${0}, 0;\n"
                    "wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} "
                    "{{{3}}, {{${4}, ${5}, ${6}, ${7}}, ${8}, p, 1, 1, 1;\n}",
                    a + 5, n, elementType.isBF16() ? "bf16" : "f16", outs, a,
                    a + 1, a + 2, a + 3, a + 4)
          .str();
  std::string constraints;
  for (int64_t i = 0; i < registers; ++i)
    constraints += i ? ",=f" : "=f";
  constraints += tied + ",r,r,r,r,l,n";

  // The descriptors of every step before the fence (see issueKeys).
  SmallVector<SmallVector<Value>> stepOperands;
  Value scaleD = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1));
  for (int64_t kk = 0; kk < keys / kK; ++kk) {
    SmallVector<Value> operands(probabilities.slice(4 * kk, 4));
    // 16 keys = 16 rows of 128 bytes further along V.
    operands.push_back(
        advanceLowWord(b, loc, valueDescriptor, kk * kK * kSwizzleSpanBytes));
    operands.push_back(scaleD);
    stepOperands.push_back(std::move(operands));
  }
  SmallVector<Value> acc(out);
  fence();
  for (int64_t kk = 0; kk < keys / kK; ++kk) {
    SmallVector<Value> operands(acc);
    llvm::append_range(operands, stepOperands[kk]);
    Value result = inlinePtx(b, loc, accType, operands, asmString, constraints,
                             /*sideEffects=*/true);
    acc = unpack(result);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return acc;
}
