//===- Pingpong.cpp - consumer warpgroups taking turns --------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "Pingpong.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

Value Pingpong::barrierOf(Value c) { return toI32(add(c, 1)); }

Value Pingpong::threads() {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(kThreads));
}

void Pingpong::arrive(Value barrier) {
  NVVM::BarrierArriveOp::create(b, loc, barrier, threads());
}

void Pingpong::start() {
  if (!enabled)
    return;
  auto first = scf::IfOp::create(b, loc, eq(consumer, idx(0)));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(first.thenBlock());
  arrive(barrierOf(consumer));
}

void Pingpong::waitTurn() {
  if (!enabled)
    return;
  Value barrier = barrierOf(consumer);
  NVVM::BarrierOp::create(b, loc, /*res=*/Type(), barrier, threads(),
                          /*reductionOp=*/nullptr,
                          /*reductionPredicate=*/Value());
}

void Pingpong::passTurn(bool last) {
  if (!enabled)
    return;
  Value other = sub(idx(1), consumer);
  if (!last)
    return arrive(barrierOf(other));
  auto first = scf::IfOp::create(b, loc, eq(consumer, idx(0)));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(first.thenBlock());
  arrive(barrierOf(other));
}
