// Speculative decoding as the engine sees it (vLLM's --speculative-config):
//  * SpeculativeOptions: the parsed flag (method mtp / qwen3_next_mtp / qwen3_5_mtp,
//    num_speculative_tokens K in 1..4, disable_by_batch_size);
//  * DraftSource: what proposes the K draft tokens of each speculating sequence after
//    every step. The real one is the checkpoint's MTP head (ModelRunner::draft_source());
//    tests plug in oracles. Drafts are chosen deterministically (argmax), so the
//    verifier treats the draft distribution as one-hot (sampling/sampler.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace qinfer::engine {

class RunnerSequence;

// One sequence's draft request, made after each forward that advanced it. The rows
// are the positions pos0 .. pos0+n-1 that the main model has just accepted: row t
// carries the main model's post-norm hidden state there and the token that follows
// it (next_tokens[t]; the last is the token sampled from the last row, the next
// decode input). The source brings its own caches up to date with these rows
// (dropping whatever it had at pos0 and later) and, when k > 0, writes k drafts.
struct DraftRequest {
  RunnerSequence* seq = nullptr;
  int64_t pos0 = 0;
  const int* next_tokens = nullptr;    // [n]
  const float* hidden = nullptr;       // [n][hidden_size]
  int64_t n = 0;
  int k = 0;                           // drafts wanted (0: only bring the caches up to date)
  const std::vector<int>* context = nullptr;  // prompt + output so far (ends with next_tokens[n-1])
  std::vector<int> drafts;             // out: k token ids
};

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // All requests of one engine step, as one batch.
  virtual void propose(std::vector<DraftRequest>& reqs) = 0;
};

struct SpeculativeOptions {
  std::string method;                  // "mtp" (qwen3_next_mtp / qwen3_5_mtp are the same head)
  int num_speculative_tokens = 0;      // K; 0: speculation off
  int disable_by_batch_size = 0;       // > 0: no drafts in a step with at least this many decoding sequences
  int64_t draft_vocab_size = 0;        // qinfer's own key: > 0 drafts only among token ids below it (a
                                       // cheaper draft lm_head; the verified output does not change)
  bool draft_int8 = false;             // qinfer's own "draft_lm_head": "int8": drafts score with an int8
                                       // copy of the lm_head (half the bytes; the verified output does not change)
  bool draft_layer_int8 = false;       // qinfer's own "draft_layer": "int8": the MTP layer re-encoded as int8
                                       // at load (half its bytes per draft; the verified output does not change)
  DraftSource* draft_override = nullptr;   // tests: use this instead of the model's MTP head
  bool enabled() const { return num_speculative_tokens > 0; }
};

// Parses vLLM's --speculative-config JSON ({"method": "mtp", "num_speculative_tokens": 3,
// "disable_by_batch_size": N}, plus qinfer's "draft_vocab_size": N, "draft_lm_head": "int8" and "draft_layer": "int8"); errors name the flag and the field. Unknown keys that vLLM
// accepts for GPU runs (e.g. "model", "draft_tensor_parallel_size") are ignored with a warning.
SpeculativeOptions parse_speculative_config(const std::string& json_text);

// Spec-decode counters (vLLM's names on /metrics: vllm:spec_decode_num_drafts, ...).
struct SpecDecodeStats {
  int64_t num_drafts = 0;              // verify passes that carried at least one draft
  int64_t num_draft_tokens = 0;        // drafts verified
  int64_t num_accepted_tokens = 0;     // drafts accepted
  std::vector<int64_t> accepted_per_pos;   // [K]: drafts accepted at position i of their run
  double acceptance_rate() const { return num_draft_tokens ? double(num_accepted_tokens) / num_draft_tokens : 0.0; }
  // Tokens emitted per verify pass (accepted drafts + the one the target samples).
  double mean_accepted_length() const { return num_drafts ? 1.0 + double(num_accepted_tokens) / num_drafts : 0.0; }
  // The counters gathered since `before` (an earlier reading of the same engine's stats).
  SpecDecodeStats since(const SpecDecodeStats& before) const;
  // One line: verify passes, draft and accepted tokens, acceptance rate, mean accepted
  // length, per-position acceptance (what `generate` and `chat` log).
  std::string summary() const;
};

}  // namespace qinfer::engine
