//===- Mutator.h - what the target and its mutator share ------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_FUZZ_MUTATOR_H
#define GATED_ATTENTION_FUZZ_MUTATOR_H

#include "llvm/ADT/DenseSet.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gated_attention_fuzz {

/// An input is a header of kHeaderSize bytes (the pipeline and its
/// options), then MLIR text.
constexpr size_t kHeaderSize = 5;

/// Texts seen to parse and verify (a pool the mutator draws from) and hashes
/// of texts seen not to: most mutants of invalid IR are invalid again, so
/// the mutator usually swaps such a parent's text for a valid one first.
/// The target fills them (Mutator.cpp defines them).
extern std::vector<std::string> validTexts;
extern llvm::DenseSet<uint64_t> invalidHashes;

} // namespace gated_attention_fuzz

#endif // GATED_ATTENTION_FUZZ_MUTATOR_H
