//===- Mutator.cpp - the fuzz target's structure-aware mutator ------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//
//
// LLVMFuzzerCustomMutator: mutates what matters to the project (shapes,
// element types, the op's attributes, options) and otherwise defers to
// libFuzzer's byte-level mutator.
//
//===----------------------------------------------------------------------===//

#include "Mutator.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <random>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace gated_attention_fuzz {
std::vector<std::string> validTexts;
llvm::DenseSet<uint64_t> invalidHashes;
} // namespace gated_attention_fuzz

using gated_attention_fuzz::invalidHashes;
using gated_attention_fuzz::kHeaderSize;
using gated_attention_fuzz::validTexts;

namespace {

using Rng = std::minstd_rand;

size_t below(Rng &rng, size_t n) { return n ? rng() % n : 0; }

template <size_t N> const char *choose(Rng &rng, const char *const (&t)[N]) {
  return t[below(rng, N)];
}

const char *const kDims[] = {"0",
                             "1",
                             "2",
                             "3",
                             "4",
                             "7",
                             "8",
                             "16",
                             "17",
                             "32",
                             "64",
                             "128",
                             "256",
                             "1024",
                             "?",
                             "?",
                             "65536",
                             "1048576",
                             "2147483648",
                             "1099511627776",
                             "4611686018427387904",
                             "9223372036854775807"};
const char *const kElementTypes[] = {"f32",      "f16",  "bf16",        "f64",
                                     "i32",      "i8",   "i1",          "index",
                                     "f8E4M3FN", "tf32", "complex<f32>"};
const char *const kGates[] = {"sigmoid", "silu", "ns_sigmoid", "tanh",
                              "none",    "relu", "Sigmoid",    ""};
const char *const kCombines[] = {"mul", "add", "sub", ""};
const char *const kScales[] = {
    "0.125 : f32",  "0.0 : f32",        "-1.0 : f32",       "1.0e+38 : f32",
    "3.4e38 : f32", "0x7FC00000 : f32", "0x7F800000 : f32", "1.0e-45 : f32",
    "1 : i32",      "0.5 : f64",        "0.5 : f16",        "0.5"};
const char *const kAttrs[] = {"causal",
                              "is_causal",
                              "causal = false",
                              "causal = true",
                              "scale = 0.5 : f32",
                              "scael = 0.5 : f32",
                              "scale = 0x7FC00000 : f32",
                              "gate = #gated_attention.gate<silu>",
                              "gate = #gated_attention.gate<ns_sigmoid>",
                              "gate = #gated_attention.gate<sigmoid>",
                              "gate = \"sigmoid\"",
                              "combine = #gated_attention.combine<add>",
                              "combine = #gated_attention.combine<mul>",
                              "gated_attention.tag = 1",
                              "foo.bar"};

struct Span {
  size_t begin, end;
};

bool isWordChar(char c) { return llvm::isAlnum(c) || c == '_'; }

/// Dimensions of every tensor/memref/vector type: the spans of `N` or `?`
/// before an `x`.
std::vector<Span> findDims(const std::string &s) {
  std::vector<Span> dims;
  for (const char *prefix : {"tensor<", "memref<", "vector<"}) {
    for (size_t at = s.find(prefix); at != std::string::npos;
         at = s.find(prefix, at + 1)) {
      size_t i = at + std::strlen(prefix);
      while (i < s.size()) {
        size_t j = i;
        if (s[j] == '?')
          ++j;
        else
          while (j < s.size() && llvm::isDigit(s[j]))
            ++j;
        if (j == i || j >= s.size() || s[j] != 'x')
          break;
        dims.push_back({i, j});
        i = j + 1;
      }
    }
  }
  return dims;
}

/// Whole-word occurrences of any of `words`.
template <size_t N>
std::vector<Span> findWords(const std::string &s,
                            const char *const (&words)[N]) {
  std::vector<Span> found;
  for (const char *w : words) {
    size_t len = std::strlen(w);
    if (!len)
      continue;
    for (size_t at = s.find(w); at != std::string::npos;
         at = s.find(w, at + 1)) {
      bool startOk = at == 0 || !isWordChar(s[at - 1]);
      bool endOk = at + len >= s.size() || !isWordChar(s[at + len]);
      if (startOk && endOk)
        found.push_back({at, at + len});
    }
  }
  return found;
}

/// Replaces every occurrence (in `spans`) of the text of one span by `with`.
void replaceAllLike(std::string &s, std::vector<Span> spans, Span like,
                    const std::string &with) {
  std::string old = s.substr(like.begin, like.end - like.begin);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it)
    if (s.compare(it->begin, it->end - it->begin, old) == 0)
      s.replace(it->begin, it->end - it->begin, with);
}

void sortSpans(std::vector<Span> &spans) {
  std::sort(spans.begin(), spans.end(),
            [](Span a, Span b) { return a.begin < b.begin; });
}

bool mutateDims(std::string &s, Rng &rng) {
  std::vector<Span> dims = findDims(s);
  if (dims.empty())
    return false;
  sortSpans(dims);
  Span d = dims[below(rng, dims.size())];
  std::string with = choose(rng, kDims);
  if (rng() % 5) // consistently, as a shape parameter (D, Sq, ...)
    replaceAllLike(s, dims, d, with);
  else
    s.replace(d.begin, d.end - d.begin, with);
  return true;
}

bool mutateElementType(std::string &s, Rng &rng) {
  std::vector<Span> types = findWords(s, kElementTypes);
  if (types.empty())
    return false;
  sortSpans(types);
  Span t = types[below(rng, types.size())];
  // Mostly one float type for another: arith and math ops stay valid.
  static const char *const kFloats[] = {"f32", "f16", "bf16", "f64"};
  std::string with =
      rng() % 4 ? choose(rng, kFloats) : choose(rng, kElementTypes);
  if (rng() % 5) // usually everywhere, so that the op stays consistent
    replaceAllLike(s, types, t, with);
  else
    s.replace(t.begin, t.end - t.begin, with);
  return true;
}

/// The position just past a random occurrence of `key` in `s`, or npos.
size_t pastRandomOccurrence(const std::string &s, Rng &rng,
                            const std::string &key) {
  std::vector<size_t> at;
  for (size_t i = s.find(key); i != std::string::npos; i = s.find(key, i + 1))
    at.push_back(i + key.size());
  return at.empty() ? std::string::npos : at[below(rng, at.size())];
}

/// Replaces the word inside `#gated_attention.<what><...>`.
bool mutateEnumAttr(std::string &s, Rng &rng, const char *what,
                    const char *const *values, size_t n) {
  size_t b = pastRandomOccurrence(
      s, rng, std::string("#gated_attention.") + what + "<");
  if (b == std::string::npos)
    return false;
  size_t e = s.find('>', b);
  if (e == std::string::npos)
    return false;
  s.replace(b, e - b, values[below(rng, n)]);
  return true;
}

bool mutateScale(std::string &s, Rng &rng) {
  size_t at = s.find("scale = ");
  if (at == std::string::npos)
    return false;
  size_t b = at + 8;
  size_t e = b;
  // The value and its type: up to the end of the attribute.
  while (e < s.size() && s[e] != ',' && s[e] != '}' && s[e] != '\n')
    ++e;
  s.replace(b, e - b, choose(rng, kScales));
  return true;
}

/// Adds an attribute to (or drops the dictionary of) a gated_attention op.
bool mutateOpAttrs(std::string &s, Rng &rng) {
  size_t at = pastRandomOccurrence(s, rng, "gated_attention.attention");
  if (at == std::string::npos)
    return false;
  size_t colon = s.find(" : ", at);
  size_t brace = s.find('{', at);
  size_t eol = s.find('\n', at);
  std::string attr = choose(rng, kAttrs);
  bool hasDict = brace != std::string::npos &&
                 (colon == std::string::npos || brace < colon) &&
                 (eol == std::string::npos || brace < eol);
  if (hasDict) {
    size_t close = s.find('}', brace);
    if (close != std::string::npos && (rng() % 3 == 0)) {
      s.erase(brace, close - brace + 1);
      return true;
    }
    s.insert(brace + 1, attr + ", ");
    return true;
  }
  if (colon == std::string::npos || (eol != std::string::npos && colon > eol))
    return false;
  s.insert(colon, " {" + attr + "}");
  return true;
}

/// Duplicates, drops or swaps a line.
bool mutateLines(std::string &s, Rng &rng) {
  std::vector<Span> lines;
  for (size_t b = 0; b < s.size();) {
    size_t e = s.find('\n', b);
    e = e == std::string::npos ? s.size() : e + 1;
    lines.push_back({b, e});
    b = e;
  }
  if (lines.size() < 2)
    return false;
  Span l = lines[below(rng, lines.size())];
  std::string line = s.substr(l.begin, l.end - l.begin);
  switch (below(rng, 3)) {
  case 0:
    s.insert(l.begin, line);
    break;
  case 1:
    s.erase(l.begin, l.end - l.begin);
    break;
  default: {
    Span m = lines[below(rng, lines.size())];
    if (m.begin == l.begin)
      return false;
    std::string other = s.substr(m.begin, m.end - m.begin);
    if (m.begin > l.begin) {
      s.replace(m.begin, m.end - m.begin, line);
      s.replace(l.begin, l.end - l.begin, other);
    } else {
      s.replace(l.begin, l.end - l.begin, other);
      s.replace(m.begin, m.end - m.begin, line);
    }
  }
  }
  return true;
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  Rng rng(seed);
  if (maxSize <= kHeaderSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  if (size < kHeaderSize) {
    for (size_t i = size; i < kHeaderSize; ++i)
      data[i] = rng();
    size = kHeaderSize;
  }
  // A parent whose text did not parse or verify: usually mutate a valid
  // text instead (with the parent's pipeline and options).
  if (!validTexts.empty() && rng() % 4 != 0 &&
      invalidHashes.contains(llvm::xxh3_64bits(llvm::StringRef(
          reinterpret_cast<char *>(data) + kHeaderSize, size - kHeaderSize)))) {
    const std::string &valid = validTexts[below(rng, validTexts.size())];
    if (kHeaderSize + valid.size() <= maxSize) {
      std::memcpy(data + kHeaderSize, valid.data(), valid.size());
      size = kHeaderSize + valid.size();
    }
  }
  // Weights out of 100. Most mutations keep the IR valid (consistent shape
  // and type changes, the pipeline and options), so that most inputs reach
  // a pipeline; byte-level ones mostly exercise upstream's parser.
  unsigned choice = below(rng, 100);
  if (choice < 15) { // the pipeline or an option
    size_t i = below(rng, kHeaderSize);
    data[i] = rng() & 1 ? rng() : data[i] ^ (1u << below(rng, 8));
    return size;
  }
  if (choice >= 88) { // libFuzzer's own, on the text (sometimes all bytes)
    if (choice >= 98)
      return LLVMFuzzerMutate(data, size, maxSize);
    return kHeaderSize + LLVMFuzzerMutate(data + kHeaderSize,
                                          size - kHeaderSize,
                                          maxSize - kHeaderSize);
  }
  std::string text(reinterpret_cast<char *>(data) + kHeaderSize,
                   size - kHeaderSize);
  bool changed = false;
  if (choice < 45)
    changed = mutateDims(text, rng);
  else if (choice < 60)
    changed = mutateElementType(text, rng);
  else if (choice < 65)
    changed = mutateEnumAttr(text, rng, "gate", kGates, std::size(kGates));
  else if (choice < 69)
    changed =
        mutateEnumAttr(text, rng, "combine", kCombines, std::size(kCombines));
  else if (choice < 74)
    changed = mutateScale(text, rng);
  else if (choice < 82)
    changed = mutateOpAttrs(text, rng);
  else
    changed = mutateLines(text, rng);
  if (!changed || kHeaderSize + text.size() > maxSize)
    return kHeaderSize + LLVMFuzzerMutate(data + kHeaderSize,
                                          size - kHeaderSize,
                                          maxSize - kHeaderSize);
  std::memcpy(data + kHeaderSize, text.data(), text.size());
  return kHeaderSize + text.size();
}
