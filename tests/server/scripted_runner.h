// A model stand-in that "generates" a fixed token script: the next token is the
// script entry after the longest suffix of the sequence's history that matches a
// script prefix, so every sequence (batched or not) replays the script, then EOS.
#pragma once
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/model_runner.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace qinfer::server::testing {

class ScriptedSequence : public engine::RunnerSequence {
 public:
  explicit ScriptedSequence(std::atomic<int>* live) : live_(live) { ++*live_; }
  ~ScriptedSequence() override { --*live_; }
  std::vector<int> history;

 private:
  std::atomic<int>* live_;
};

class ScriptedRunner : public engine::ModelRunner {
 public:
  ScriptedRunner(int vocab, int eos, int64_t max_ctx = 4096) : vocab_(vocab), eos_(eos), max_ctx_(max_ctx) {}
  void set_script(std::vector<int> s) {
    std::lock_guard<std::mutex> lk(mu_);
    script_ = std::move(s);
  }
  std::atomic<int> live{0};
  std::atomic<int> delay_ms{0};  // per forward call, to keep a request running for a while
  int vocab_size() const override { return vocab_; }
  int64_t max_context() const override { return max_ctx_; }
  std::vector<int> eos_token_ids() const override { return {eos_}; }
  std::unique_ptr<engine::RunnerSequence> new_sequence() override {
    return std::make_unique<ScriptedSequence>(&live);
  }
  void forward(const std::vector<engine::RunnerStep>& steps) override {
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms.load()));
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto& s : steps) {
      auto* q = static_cast<ScriptedSequence*>(s.seq);
      // all_logits: one row per token (each row predicts from the history up to it).
      for (int64_t t = 0; t < s.n_tokens; ++t) {
        q->history.push_back(s.tokens[t]);
        if (!s.all_logits && t + 1 < s.n_tokens) continue;
        float* row = s.all_logits ? s.logits + t * vocab_ : s.logits;
        size_t m = 0;
        for (size_t j = std::min(script_.size(), q->history.size()); j > 0; --j) {
          if (std::equal(script_.begin(), script_.begin() + static_cast<long>(j), q->history.end() - static_cast<long>(j))) {
            m = j;
            break;
          }
        }
        int target = m < script_.size() ? script_[m] : eos_;
        std::fill(row, row + vocab_, 0.f);
        row[target] = 100.f;
      }
    }
  }

 private:
  std::mutex mu_;
  std::vector<int> script_;
  int vocab_, eos_;
  int64_t max_ctx_;
};

// An engine over `runner` with the tokenizer and chat template of `tok_dir`; `tok` (if
// given) is set to its tokenizer.
inline std::unique_ptr<engine::Engine> make_engine(std::unique_ptr<engine::ModelRunner> runner, const std::string& tok_dir,
                                                   int max_num_seqs, Tokenizer** tok = nullptr) {
  auto t = std::make_unique<Tokenizer>(Tokenizer::load(tok_dir));
  if (tok) *tok = t.get();
  engine::EngineOptions eo;
  eo.max_num_seqs = max_num_seqs;
  return std::make_unique<engine::Engine>(std::move(runner), std::move(t),
                                          std::make_unique<ChatTemplate>(ChatTemplate::load(tok_dir)), eo);
}

}  // namespace qinfer::server::testing
