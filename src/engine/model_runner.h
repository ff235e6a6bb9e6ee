// The engine's view of a model: something that advances several sequences in one
// batched call. The real one wraps qinfer::Model (model_runner.cc); tests use fakes.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/speculative.h"

namespace qinfer::engine {

class RunnerSequence {
 public:
  virtual ~RunnerSequence() = default;
};

struct RunnerStep {
  RunnerSequence* seq;
  const int* tokens;
  int64_t n_tokens;      // >= 1: a prefill chunk, one decode token or a verify run
  float* logits;         // [vocab] row of the step's last token ([n_tokens][vocab] when all_logits)
  bool all_logits = false;
  float* hidden = nullptr;   // optional [n_tokens][hidden_size()]: post-norm hidden states
  bool keep_states = false;  // verify run: rollback() may keep any prefix of its tokens
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int vocab_size() const = 0;          // logits row length
  virtual int64_t max_context() const = 0;
  virtual std::vector<int> eos_token_ids() const = 0;
  virtual std::unique_ptr<RunnerSequence> new_sequence() = 0;
  // One batched call advancing every step's sequence by its tokens.
  virtual void forward(const std::vector<RunnerStep>& steps) = 0;

  // Speculative decoding (engine/speculative.h); a runner without it keeps these defaults.
  virtual int hidden_size() const { return 0; }
  virtual DraftSource* draft_source() { return nullptr; }   // the MTP head, when loaded
  // After a keep_states step of n tokens: keep its first `keep` (1..n) tokens, exactly.
  virtual void rollback(RunnerSequence*, int64_t) { throw std::logic_error("rollback: not supported by this runner"); }
};

struct RunnerLoadOptions {
  int threads = 0;
  bool dense_int8 = false;
  bool load_mtp = false;     // load the mtp.* draft head (error when the checkpoint has none)
  int64_t draft_vocab = 0;   // > 0: the MTP drafts among token ids below this only
};

// Loads qinfer::Model from a checkpoint folder. EOS ids: generation_config.json's
// eos_token_id (int or list) merged with the config's.
std::unique_ptr<ModelRunner> load_model_runner(const std::string& dir, const RunnerLoadOptions& opts);

}  // namespace qinfer::engine
