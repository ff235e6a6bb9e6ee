// The one grammar form everything compiles to: a regular expression tree over BYTES.
// JSON Schema, regular expressions, choice lists, GBNF grammars and the qwen3_coder tool-call
// format are all turned into this tree, then into a byte NFA (nfa.h) and a lazily built DFA
// (dfa.h). Recursion (JSON nesting, recursive $ref / GBNF rules) is unrolled to a bounded
// depth, so every grammar here is regular; see docs/ARCHITECTURE.md.
// Code points are written as UTF-8 byte sequences (utf8_class), so a token that ends in the
// middle of a multi-byte character is walked like any other byte string.
#pragma once
#include <bitset>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qinfer::grammar {

// A bad or unsupported grammar/schema/regex. The message names the place (a JSON pointer into
// the schema, a regex offset, a GBNF rule) and the feature.
class GrammarError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Node;
using NodePtr = std::shared_ptr<const Node>;
using ByteSet = std::bitset<256>;

struct Node {
  enum class Kind {
    kNothing,  // matches no string at all (an empty class, an exhausted recursion)
    kEmpty,    // matches only ""
    kByte,     // one byte from `set`
    kSeq,      // kids one after another
    kAlt,      // any one kid
    kRepeat,   // kid repeated min..max times (max < 0: unbounded)
    kProps,    // JSON object members: kids[i] optional unless required[i], in order,
               // `sep` between the ones present (built linearly, not as 2^n alternatives)
  };
  Kind kind = Kind::kEmpty;
  ByteSet set;
  std::vector<NodePtr> kids;
  int min = 0, max = -1;
  std::vector<bool> required;
  NodePtr sep;
};

NodePtr nothing();
NodePtr empty();
NodePtr byte_set(const ByteSet& s);
NodePtr byte_range(uint8_t lo, uint8_t hi);
NodePtr literal(std::string_view bytes);
NodePtr seq(std::vector<NodePtr> kids);
NodePtr alt(std::vector<NodePtr> kids);
NodePtr repeat(NodePtr kid, int min, int max);
NodePtr optional(NodePtr kid);
NodePtr props(std::vector<NodePtr> members, std::vector<bool> required, NodePtr sep);

bool is_nothing(const NodePtr& n);

// A set of Unicode code points as sorted, disjoint, non-adjacent closed ranges.
using CodeRanges = std::vector<std::pair<uint32_t, uint32_t>>;
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
CodeRanges normalise(CodeRanges r);
CodeRanges complement(const CodeRanges& r);          // over [0, 0x10FFFF] minus surrogates
CodeRanges subtract(const CodeRanges& a, const CodeRanges& b);
bool contains(const CodeRanges& r, uint32_t cp);
// One code point of the set, as UTF-8 (surrogates are never produced).
NodePtr utf8_class(const CodeRanges& r);

}  // namespace qinfer::grammar
