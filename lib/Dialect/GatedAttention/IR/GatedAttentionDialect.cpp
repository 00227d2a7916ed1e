//===- GatedAttentionDialect.cpp - gated_attention dialect ----------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionDialect.h"
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gated_attention;

#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.cpp.inc"

namespace {
/// The ops are pure functions of their operands: a call to a function that
/// holds them (a layer of a model graph) may be inlined.
struct GatedAttentionInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;

  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void GatedAttentionDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionOps.cpp.inc"
      >();
  addInterfaces<GatedAttentionInlinerInterface>();
}

// A tile grid's loops are not a device's processing units: their id and
// index are the loop's position, and no mapping is linear.
int64_t TileMappingAttr::getMappingId() const { return getDim(); }
bool TileMappingAttr::isLinearMapping() const { return false; }
int64_t TileMappingAttr::getRelativeIndex() const { return getDim(); }

Attribute TileMappingAttr::parse(AsmParser &parser, Type) {
  int64_t dim;
  bool growing = false;
  if (parser.parseLess() || parser.parseInteger(dim))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("growing"))
      return {};
    growing = true;
  }
  if (parser.parseGreater())
    return {};
  return TileMappingAttr::get(parser.getContext(), dim, growing);
}

void TileMappingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getDim();
  if (getGrowing())
    printer << ", growing";
  printer << ">";
}

void GatedAttentionDialect::addRaisePatterns(RaisePatternsFn populate) {
  raisePatterns.push_back(populate);
}

void GatedAttentionDialect::populateRaisePatterns(
    RewritePatternSet &patterns) const {
  for (RaisePatternsFn populate : raisePatterns)
    populate(patterns);
}
