#include "grammar/grammar.h"

#include <algorithm>
#include <cstring>

namespace qinfer::grammar {

Grammar::Grammar(const NodePtr& root, std::shared_ptr<const TokenVocab> vocab)
    : vocab_(std::move(vocab)), dfa_(Nfa::build(*root)) {}

int32_t Grammar::walk(int32_t state, std::string_view bytes) const {
  for (unsigned char c : bytes) {
    state = dfa_.step(state, c);
    if (state == Dfa::kDead) return state;
  }
  return state;
}

bool Grammar::matches(std::string_view text) const {
  std::lock_guard<std::mutex> lk(mu_);
  const int32_t s = walk(dfa_.start(), text);
  return s != Dfa::kDead && dfa_.accepting(s);
}

bool Grammar::is_prefix(std::string_view text) const {
  std::lock_guard<std::mutex> lk(mu_);
  return walk(dfa_.start(), text) != Dfa::kDead;
}

size_t Grammar::num_nfa_states() const { return dfa_.num_nfa_states(); }

size_t Grammar::num_dfa_states() const {
  std::lock_guard<std::mutex> lk(mu_);
  return dfa_.num_states();
}

size_t Grammar::num_cached_masks() const {
  std::lock_guard<std::mutex> lk(mu_);
  return masks_.size();
}

const std::vector<uint64_t>& Grammar::mask_locked(int32_t state) const {
  auto it = masks_.find(state);
  if (it != masks_.end()) return it->second;
  if (masks_.size() >= kMaxCachedMasks) masks_.clear();  // bound the memory (31 KB a mask for 248k tokens)
  std::vector<uint64_t> m((size_t(vocab_->size()) + 63) / 64, 0);
  // Raw pointers into the (immutable) vocabulary: the mask writes cannot alias them, so the
  // compiler keeps them in registers.
  const int32_t* order = vocab_->order().data();
  const uint16_t* lcp = vocab_->lcp().data();
  const size_t n = vocab_->order().size();
  const char* bytes = n ? vocab_->sorted_bytes(0).data() : nullptr;
  uint64_t* out = m.data();
  walk_states_.assign(vocab_->max_len() + 1, Dfa::kDead);
  int32_t* st = walk_states_.data();
  st[0] = state;
  size_t alive = 0;     // st[0..alive] hold the previous token's live prefix states
  long dead_at = -1;    // the previous token died at this byte (-1: it did not)
  size_t begin = 0;     // offset of token i's bytes in `bytes`
  for (size_t i = 0; i < n; ++i) {
    const size_t len = vocab_->sorted_bytes(i).size();
    const char* b = bytes + begin;
    begin += len;
    const size_t l = lcp[i];
    if (dead_at >= 0 && long(l) > dead_at) continue;  // shares the prefix that died
    size_t d = l < alive ? l : alive;
    bool ok = true;
    for (; d < len; ++d) {
      const int32_t next = dfa_.step(st[d], uint8_t(b[d]));
      if (next == Dfa::kDead) {
        ok = false;
        break;
      }
      st[d + 1] = next;
    }
    alive = d;
    dead_at = ok ? -1 : long(d);
    if (ok) out[size_t(order[i]) >> 6] |= uint64_t(1) << (order[i] & 63);
  }
  return masks_.emplace(state, std::move(m)).first->second;
}

Matcher::Matcher(std::shared_ptr<const Grammar> g, std::vector<int> eos_ids, int n_bits, int start_after)
    : g_(std::move(g)), eos_(std::move(eos_ids)), n_bits_(n_bits), start_after_(start_after),
      started_(start_after < 0) {
  std::lock_guard<std::mutex> lk(g_->mu_);
  state_ = g_->dfa_.start();
}

const uint64_t* Matcher::mask(bool allow_eos) {
  buf_.assign((size_t(std::max(n_bits_, 0)) + 63) / 64, 0);
  std::lock_guard<std::mutex> lk(g_->mu_);
  const std::vector<uint64_t>& m = g_->mask_locked(state_);
  const size_t words = std::min(buf_.size(), m.size());
  std::memcpy(buf_.data(), m.data(), words * sizeof(uint64_t));
  if (n_bits_ % 64 != 0 && words == buf_.size()) buf_.back() &= (uint64_t(1) << (n_bits_ % 64)) - 1;
  if (allow_eos && g_->dfa_.accepting(state_)) {
    for (int e : eos_) {
      if (e >= 0 && e < n_bits_) buf_[size_t(e) >> 6] |= uint64_t(1) << (e & 63);
    }
  }
  return buf_.data();
}

bool Matcher::accept(int token) {
  if (!started_) {
    if (token == start_after_) started_ = true;
    return true;
  }
  if (!g_->vocab().usable(token)) return false;
  std::lock_guard<std::mutex> lk(g_->mu_);
  const int32_t n = g_->walk(state_, g_->vocab().bytes(token));
  if (n == Dfa::kDead) return false;
  state_ = n;
  return true;
}

bool Matcher::accepting() const {
  std::lock_guard<std::mutex> lk(g_->mu_);
  return started_ && g_->dfa_.accepting(state_);
}

bool Matcher::terminated() const {
  if (!started_) return false;
  std::lock_guard<std::mutex> lk(g_->mu_);
  return g_->dfa_.accepting(state_) && !g_->dfa_.can_continue(state_);
}

}  // namespace qinfer::grammar
