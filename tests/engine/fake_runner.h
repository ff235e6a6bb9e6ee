// A deterministic stand-in for the model: each sequence's next-token logits are a
// function of its whole token history, so mixing up sequences in a batch, dropping a
// prefill chunk or feeding a wrong token changes the output.
#pragma once
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/model_runner.h"
#include "util/error.h"

namespace qinfer::engine::testing {

inline constexpr int kFakeVocab = 64;
inline constexpr int kFakeEos = 0;
inline constexpr int kFakeToEos = 7;   // after token 7 the fake always predicts EOS
inline constexpr int kFakePoison = 63; // forward() refuses a step holding this token

struct FakeStats {
  std::atomic<int> live{0}, max_live{0};
  std::mutex mu;
  std::vector<std::vector<int64_t>> calls;  // n_tokens of each step, per forward call
  // While closed, forward() waits (at most 10 s), so tests can queue requests behind it.
  std::condition_variable gate_cv;
  bool gate_closed = false;
  void close_gate() {
    std::lock_guard<std::mutex> lk(mu);
    gate_closed = true;
  }
  void open_gate() {
    {
      std::lock_guard<std::mutex> lk(mu);
      gate_closed = false;
    }
    gate_cv.notify_all();
  }
};

class FakeSequence : public RunnerSequence {
 public:
  explicit FakeSequence(FakeStats* s) : stats(s) {
    int l = ++stats->live;
    int m = stats->max_live.load();
    while (l > m && !stats->max_live.compare_exchange_weak(m, l)) {}
  }
  ~FakeSequence() override { --stats->live; }
  FakeStats* stats;
  uint64_t hash = 1469598103934665603ull;
  int last = -1;
  int64_t n = 0;
  // Speculative verify (RunnerStep::keep_states): (hash, last) after each token of the step.
  std::vector<std::pair<uint64_t, int>> kept;
};

// Greedy target of a history hash.
inline int fake_target(uint64_t hash, int last) {
  if (last == kFakeToEos) return kFakeEos;
  return 1 + static_cast<int>((hash >> 17) % (kFakeVocab - 2));  // never the poison id
}

inline void fake_fill(uint64_t hash, int last, float* logits) {
  int t = fake_target(hash, last);
  for (int j = 0; j < kFakeVocab; ++j) {
    logits[j] = static_cast<float>(std::sin(static_cast<double>((hash >> 7) % 1000) + j));
  }
  logits[t] = 4.f;
  logits[kFakePoison] = -1e30f;  // not even sampled
}

inline uint64_t fake_mix(uint64_t h, int tok) { return (h ^ static_cast<uint64_t>(tok + 1)) * 1099511628211ull; }

class FakeRunner : public ModelRunner {
 public:
  explicit FakeRunner(FakeStats* s, int64_t max_ctx = 4096) : stats_(s), max_ctx_(max_ctx) {}
  int vocab_size() const override { return kFakeVocab; }
  int64_t max_context() const override { return max_ctx_; }
  std::vector<int> eos_token_ids() const override { return {kFakeEos}; }
  std::unique_ptr<RunnerSequence> new_sequence() override { return std::make_unique<FakeSequence>(stats_); }
  void forward(const std::vector<RunnerStep>& steps) override {
    {
      std::unique_lock<std::mutex> lk(stats_->mu);
      stats_->gate_cv.wait_for(lk, std::chrono::seconds(10), [&] { return !stats_->gate_closed; });
    }
    std::vector<int64_t> sizes;
    // Like the real model: every step is checked before any state changes.
    for (const auto& s : steps) {
      if (s.n_tokens < 1 || !s.logits) fail("fake: bad step");
      for (int64_t i = 0; i < s.n_tokens; ++i) {
        if (s.tokens[i] < 0 || s.tokens[i] >= kFakeVocab) fail("fake: token out of range");
        if (s.tokens[i] == kFakePoison) fail("fake: poisoned token");
      }
    }
    for (const auto& s : steps) {
      auto* q = static_cast<FakeSequence*>(s.seq);
      q->kept.clear();
      for (int64_t i = 0; i < s.n_tokens; ++i) {
        q->hash = fake_mix(q->hash, s.tokens[i]);
        q->last = s.tokens[i];
        if (s.all_logits) fake_fill(q->hash, q->last, s.logits + i * kFakeVocab);
        if (s.hidden) s.hidden[i] = static_cast<float>(q->hash % 1000);
        if (s.keep_states) q->kept.emplace_back(q->hash, q->last);
      }
      q->n += s.n_tokens;
      if (q->n > max_ctx_) fail("fake: past context");
      if (!s.all_logits) fake_fill(q->hash, q->last, s.logits);
      sizes.push_back(s.n_tokens);
    }
    std::lock_guard<std::mutex> lk(stats_->mu);
    stats_->calls.push_back(sizes);
  }
  // Speculation support: one hidden value per token, and rollback of a keep_states step.
  int64_t hidden_size() const override { return 1; }
  void rollback(RunnerSequence* seq, int64_t keep) override {
    auto* q = static_cast<FakeSequence*>(seq);
    if (keep < 1 || keep > static_cast<int64_t>(q->kept.size())) fail("fake: rollback outside the verify step");
    q->n -= static_cast<int64_t>(q->kept.size()) - keep;
    std::tie(q->hash, q->last) = q->kept[keep - 1];
    q->kept.clear();
  }

 private:
  FakeStats* stats_;
  int64_t max_ctx_;
};

// The greedy continuation the fake model gives, computed without the engine.
inline std::vector<int> fake_greedy(const std::vector<int>& prompt, int max_tokens) {
  uint64_t h = 1469598103934665603ull;
  int last = -1;
  for (int t : prompt) { h = fake_mix(h, t); last = t; }
  std::vector<int> out;
  while (static_cast<int>(out.size()) < max_tokens) {
    int t = fake_target(h, last);
    out.push_back(t);
    if (t == kFakeEos) break;
    h = fake_mix(h, t);
    last = t;
  }
  return out;
}

}  // namespace qinfer::engine::testing
