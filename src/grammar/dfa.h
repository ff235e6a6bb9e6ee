// A DFA built lazily from the NFA by subset construction: a state is created the first time
// a byte leads to it, and each transition is computed once. Bytes that no NFA edge tells
// apart share one class, so a state's transition row has `num_classes()` entries.
// State 0 is the dead state (no NFA state left); every other state is live (nfa.h).
// Not thread-safe: Grammar serialises access.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/nfa.h"

namespace qinfer::grammar {

class Dfa {
 public:
  explicit Dfa(Nfa nfa);
  static constexpr int32_t kDead = 0;
  int32_t start() const { return start_; }
  int32_t step(int32_t state, uint8_t byte) {
    const size_t i = size_t(state) * size_t(nclasses_) + class_of_[byte];
    const int32_t t = trans_[i];
    if (t >= 0) return t;
    const int32_t n = compute(state, class_of_[byte]);  // may grow trans_
    trans_[i] = n;
    return n;
  }
  bool accepting(int32_t state) const { return accept_[size_t(state)] != 0; }
  // Some byte leads to a live state.
  bool can_continue(int32_t state);
  size_t num_states() const { return accept_.size(); }
  int num_classes() const { return nclasses_; }
  size_t num_nfa_states() const { return nfa_.states.size(); }

 private:
  int32_t compute(int32_t state, int cls);
  int32_t intern(std::vector<int32_t> seeds);

  Nfa nfa_;
  int nclasses_ = 0;
  uint8_t class_of_[256];
  std::vector<uint8_t> class_rep_;
  std::vector<std::vector<int32_t>> members_;  // per DFA state: NFA states with a byte edge
  std::vector<uint8_t> accept_;
  std::vector<int32_t> trans_;                 // num_states * nclasses, -1: not computed
  std::unordered_map<std::string, int32_t> index_;
  std::vector<uint32_t> mark_;
  uint32_t gen_ = 0;
  int32_t start_ = 0;
};

}  // namespace qinfer::grammar
