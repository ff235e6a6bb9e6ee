#include "grammar/nfa.h"

#include <map>
#include <string>

namespace qinfer::grammar {

namespace {

struct Builder {
  Nfa& nfa;
  std::map<std::string, int32_t> set_index;

  int32_t add() {
    if (nfa.states.size() >= kMaxNfaStates) {
      throw GrammarError("grammar too large: more than " + std::to_string(kMaxNfaStates) +
                         " automaton states (lower maxLength/maxItems or nesting)");
    }
    nfa.states.emplace_back();
    return int32_t(nfa.states.size() - 1);
  }
  void eps(int32_t a, int32_t b) { nfa.states[size_t(a)].eps.push_back(b); }

  int32_t set_id(const ByteSet& s) {
    auto [it, fresh] = set_index.emplace(s.to_string(), int32_t(nfa.sets.size()));
    if (fresh) nfa.sets.push_back(s);
    return it->second;
  }

  // Builds `n` starting at `from`; returns its end state.
  int32_t build(const Node& n, int32_t from) {
    switch (n.kind) {
      case Node::Kind::kNothing:
        throw GrammarError("internal: an empty language reached the automaton builder");
      case Node::Kind::kEmpty:
        return from;
      case Node::Kind::kByte: {
        int32_t s = from;
        if (nfa.states[size_t(s)].set >= 0 || !nfa.states[size_t(s)].eps.empty()) {
          s = add();
          eps(from, s);
        }
        const int32_t e = add();
        nfa.states[size_t(s)].set = set_id(n.set);
        nfa.states[size_t(s)].next = e;
        return e;
      }
      case Node::Kind::kSeq: {
        int32_t cur = from;
        for (const auto& k : n.kids) cur = build(*k, cur);
        return cur;
      }
      case Node::Kind::kAlt: {
        const int32_t e = add();
        for (const auto& k : n.kids) {
          const int32_t s = add();
          eps(from, s);
          eps(build(*k, s), e);
        }
        return e;
      }
      case Node::Kind::kRepeat: {
        const Node& kid = *n.kids[0];
        int32_t cur = from;
        for (int i = 0; i < n.min; ++i) {
          const int32_t s = add();
          eps(cur, s);
          cur = build(kid, s);
        }
        if (n.max < 0) {
          const int32_t loop = add();
          eps(cur, loop);
          const int32_t s = add();
          eps(loop, s);
          eps(build(kid, s), loop);
          const int32_t e = add();
          eps(loop, e);
          return e;
        }
        const int32_t e = add();
        for (int i = n.min; i < n.max; ++i) {
          eps(cur, e);
          const int32_t s = add();
          eps(cur, s);
          cur = build(kid, s);
        }
        eps(cur, e);
        return e;
      }
      case Node::Kind::kProps: {
        // a: nothing emitted yet, b: at least one member emitted (so a separator comes first).
        int32_t a = from, b = -1;
        for (size_t i = 0; i < n.kids.size(); ++i) {
          const int32_t na = add(), nb = add();
          const bool req = n.required[i];
          if (!req) eps(a, na);
          {
            const int32_t s = add();
            eps(a, s);
            eps(build(*n.kids[i], s), nb);
          }
          if (b >= 0) {
            if (!req) eps(b, nb);
            const int32_t s = add();
            eps(b, s);
            eps(build(*n.kids[i], build(*n.sep, s)), nb);
          }
          a = na;
          b = nb;
        }
        const int32_t e = add();
        eps(a, e);
        if (b >= 0) eps(b, e);
        return e;
      }
    }
    return from;
  }
};

}  // namespace

Nfa Nfa::build(const Node& root) {
  if (root.kind == Node::Kind::kNothing) throw GrammarError("the grammar matches no string at all");
  Nfa nfa;
  Builder b{nfa, {}};
  nfa.start = b.add();
  nfa.final = b.build(root, nfa.start);
  return nfa;
}

}  // namespace qinfer::grammar
