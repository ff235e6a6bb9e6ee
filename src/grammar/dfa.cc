#include "grammar/dfa.h"

#include <algorithm>
#include <map>

namespace qinfer::grammar {

Dfa::Dfa(Nfa nfa) : nfa_(std::move(nfa)) {
  // Byte classes: bytes with the same membership in every edge set.
  std::map<std::vector<bool>, int> sig_class;
  for (int b = 0; b < 256; ++b) {
    std::vector<bool> sig(nfa_.sets.size());
    for (size_t i = 0; i < nfa_.sets.size(); ++i) sig[i] = nfa_.sets[i].test(size_t(b));
    auto [it, fresh] = sig_class.emplace(sig, nclasses_);
    if (fresh) {
      ++nclasses_;
      class_rep_.push_back(uint8_t(b));
    }
    class_of_[b] = uint8_t(it->second);
  }
  mark_.assign(nfa_.states.size(), 0);
  members_.push_back({});  // dead
  accept_.push_back(0);
  trans_.assign(size_t(nclasses_), kDead);
  start_ = intern({nfa_.start});
}

int32_t Dfa::intern(std::vector<int32_t> seeds) {
  ++gen_;
  std::vector<int32_t> stack = std::move(seeds), members;
  bool acc = false;
  for (int32_t s : stack) mark_[size_t(s)] = gen_;
  while (!stack.empty()) {
    const int32_t s = stack.back();
    stack.pop_back();
    const Nfa::State& st = nfa_.states[size_t(s)];
    if (s == nfa_.final) acc = true;
    if (st.set >= 0) members.push_back(s);
    for (int32_t e : st.eps) {
      if (mark_[size_t(e)] != gen_) {
        mark_[size_t(e)] = gen_;
        stack.push_back(e);
      }
    }
  }
  if (members.empty() && !acc) return kDead;
  std::sort(members.begin(), members.end());
  std::string key(reinterpret_cast<const char*>(members.data()), members.size() * sizeof(int32_t));
  key += acc ? 'a' : 'n';
  auto [it, fresh] = index_.emplace(std::move(key), int32_t(members_.size()));
  if (fresh) {
    members_.push_back(std::move(members));
    accept_.push_back(acc ? 1 : 0);
    trans_.resize(trans_.size() + size_t(nclasses_), -1);
  }
  return it->second;
}

int32_t Dfa::compute(int32_t state, int cls) {
  const uint8_t b = class_rep_[size_t(cls)];
  std::vector<int32_t> next;
  for (int32_t s : members_[size_t(state)]) {
    const Nfa::State& st = nfa_.states[size_t(s)];
    if (nfa_.sets[size_t(st.set)].test(b)) next.push_back(st.next);
  }
  if (next.empty()) return kDead;
  return intern(std::move(next));
}

bool Dfa::can_continue(int32_t state) {
  for (int c = 0; c < nclasses_; ++c) {
    if (step(state, class_rep_[size_t(c)]) != kDead) return true;
  }
  return false;
}

}  // namespace qinfer::grammar
