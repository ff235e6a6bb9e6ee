// Thompson construction: a grammar tree (ast.h) becomes a byte NFA. Each state has at most
// one byte edge (a ByteSet, stored once in `sets`) and any number of epsilon edges. Every
// reachable state can reach `final` (the tree builders drop kNothing), so a non-empty set of
// NFA states is always a live parser state.
#pragma once
#include <cstdint>
#include <vector>

#include "grammar/ast.h"

namespace qinfer::grammar {

// Above this many NFA states a grammar is refused (GrammarError) instead of eating memory.
inline constexpr size_t kMaxNfaStates = 1u << 20;

struct Nfa {
  struct State {
    int32_t set = -1;   // index into sets, -1: no byte edge
    int32_t next = -1;  // target of the byte edge
    std::vector<int32_t> eps;
  };
  std::vector<State> states;
  std::vector<ByteSet> sets;
  int32_t start = 0, final = 0;

  static Nfa build(const Node& root);
};

}  // namespace qinfer::grammar
