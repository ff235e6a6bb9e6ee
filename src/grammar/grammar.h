// A compiled grammar bound to a vocabulary, and the per-sequence Matcher that walks it.
//
// Grammar: the lazy DFA of one grammar tree plus a cache of token masks, one per DFA state:
// the set of tokens whose whole byte string can be consumed from that state. Since the DFA
// state is the whole parser state (recursion is unrolled, ast.h), a mask never depends on
// anything else and is computed at most once per state (one walk of the sorted vocabulary,
// token_vocab.h); later steps in the same state copy it. Shared by every sequence using the
// same schema; internally locked.
//
// Matcher: one sequence's position in a grammar. With start_after >= 0 the constraint starts
// only after that token has been produced (the reasoning end </think>): before it, active()
// is false and every token is accepted unchecked.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/ast.h"
#include "grammar/dfa.h"
#include "grammar/token_vocab.h"

namespace qinfer::grammar {

// Masks kept per grammar (31 KB each on the 248k vocabulary); past it the cache starts over.
inline constexpr size_t kMaxCachedMasks = 512;

class Grammar {
 public:
  Grammar(const NodePtr& root, std::shared_ptr<const TokenVocab> vocab);

  // Whole-string match (tests, validation).
  bool matches(std::string_view text) const;
  // A prefix of some string of the language.
  bool is_prefix(std::string_view text) const;
  const TokenVocab& vocab() const { return *vocab_; }
  size_t num_nfa_states() const;
  size_t num_dfa_states() const;
  size_t num_cached_masks() const;

 private:
  friend class Matcher;
  int32_t walk(int32_t state, std::string_view bytes) const;  // caller holds mu_
  const std::vector<uint64_t>& mask_locked(int32_t state) const;

  std::shared_ptr<const TokenVocab> vocab_;
  mutable std::mutex mu_;
  mutable Dfa dfa_;
  mutable std::unordered_map<int32_t, std::vector<uint64_t>> masks_;
  mutable std::vector<int32_t> walk_states_;
};

class Matcher {
 public:
  // eos_ids: allowed exactly where the grammar accepts. n_bits: length of the mask (the
  // sampler's vocabulary; ids beyond the grammar's vocabulary are never allowed).
  Matcher(std::shared_ptr<const Grammar> g, std::vector<int> eos_ids, int n_bits, int start_after = -1);

  bool active() const { return started_; }
  // Bit i set: token i may come next. allow_eos: whether EOS ids may be allowed at all
  // (false before min_tokens). Valid until the next call.
  const uint64_t* mask(bool allow_eos);
  // Advances over a produced token. Returns false if the grammar cannot take it (state
  // unchanged). Before the start token every token is taken.
  bool accept(int token);
  bool accepting() const;
  // Accepting and nothing more can follow: the output is complete.
  bool terminated() const;

 private:
  std::shared_ptr<const Grammar> g_;
  std::vector<int> eos_;
  int n_bits_;
  int start_after_;
  bool started_;
  int32_t state_;
  std::vector<uint64_t> buf_;
};

}  // namespace qinfer::grammar
