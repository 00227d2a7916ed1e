//===- LaunchDescription.cpp - a kernel's interface as JSON ---------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// The launch description of a kernel: its KernelInterface written in the
// schema that python/gated_attention/launch.py reads and documents (version
// 4; a change of meaning bumps the version).
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "KernelInterface.h"
#include "KernelTiles.h"
#include "WgmmaAtom.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gated_attention::flash;

static std::string printType(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

static llvm::json::Object describeArgument(const KernelArgument &arg) {
  llvm::json::Object out{{"name", arg.name}};
  switch (arg.kind) {
  case ArgumentKind::Buffer:
    out["kind"] = "memref";
    out["element_type"] = printType(arg.elementType);
    out["shape"] = arg.shape;
    if (arg.rowStride)
      out["row_stride"] = arg.rowStride;
    if (arg.rowAlignment)
      out["row_alignment"] = arg.rowAlignment;
    break;
  case ArgumentKind::TensorMap:
    out["kind"] = "tensor_map";
    out["element_type"] = printType(arg.elementType);
    out["shape"] = arg.shape;
    out["dims"] = llvm::json::Array(arg.dims);
    out["box"] = llvm::json::Array{kSwizzleSpanElements, arg.boxRows, 1};
    out["swizzle"] = "128B";
    out["oob_fill"] = "zero";
    break;
  case ArgumentKind::Index:
    out["kind"] = "index";
    break;
  case ArgumentKind::Stride:
    out["kind"] = "stride";
    out["of"] = llvm::json::Array(arg.of);
    out["dim"] = arg.dim;
    break;
  }
  return out;
}

std::string KernelInterface::describe(StringRef name) const {
  llvm::json::Array args;
  for (const KernelArgument &arg : arguments)
    args.push_back(describeArgument(arg));
  llvm::json::Array gridArray;
  for (const GridDimension &dim : grid) {
    llvm::json::Array d{dim.symbol, dim.divisor};
    if (!dim.addend.empty())
      d.push_back(dim.addend);
    gridArray.push_back(std::move(d));
  }
  llvm::json::Object desc{
      {"schema", "gated-attention.launch"},
      {"version", 4},
      {"instructions", instructions()},
      {"layout", layout()},
      {"page_size", cfg.pageSize},
      {"module", name},
      {"kernel", name},
      {"element_type", cfg.typeName()},
      {"Hq", cfg.numQueryHeads},
      {"Hkv", cfg.numKeyValueHeads},
      {"Hg", cfg.numGateHeads},
      {"D", cfg.headDim},
      {"Dv", cfg.valueHeadDim},
      {"gate_width", cfg.gateWidth},
      {"causal", cfg.causal},
      {"gated", cfg.hasGate},
      {"rows_per_block", cfg.role == KernelRole::BackwardPreprocess
                             ? PreprocessLanes(cfg).rowsPerBlock
                             : cfg.queryBlock()},
      {"row_group", cfg.rowGroup()},
      {"key_block", cfg.keyBlock},
      // Each grid dimension is ceildiv(symbol, divisor) (+ a third
      // symbol, where given).
      {"grid", std::move(gridArray)},
      {"block", llvm::json::Array{threads(), 1, 1}},
      {"dynamic_shared_memory", sharedMemoryBytes()},
      // A memref<?xT> argument is five kernel parameters (MLIR's default
      // memref calling convention), an index or stride argument one i64.
      {"abi",
       llvm::json::Object{
           {"memref", llvm::json::Array{"allocated", "aligned", "offset",
                                        "size", "stride"}},
           {"index", "i64"},
           {"tensor_map", "pointer"},
           {"alignment", 16}}},
      {"arguments", std::move(args)}};
  // A persistent kernel takes any grid (launch.py: grid()); old readers
  // that ignore the fields launch one CTA per tile, which stays right.
  if (persistent()) {
    desc["persistent"] = true;
    desc["ctas_per_sm"] = ctasPerSM();
  }
  // The rule the MLIR host code picks the splits by (buildSplitCount), for
  // launchers that pick them alike.
  if (cfg.isSplit())
    desc["split_rule"] =
        llvm::json::Object{{"target_ctas", kSplitTargetCTAs},
                           {"min_keys_per_split", kMinKeysPerSplit},
                           {"max_splits", kMaxSplits}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(desc));
  return s;
}
