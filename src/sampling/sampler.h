// Sampler: picks the next token from one float logits row, with vLLM's semantics and order:
//   raw logprobs (log-softmax of the unmodified row, if requested)
//   -> logit_bias -> repetition / frequency / presence penalties
//   -> greedy argmax (temperature < 1e-5; lowest id on ties)
//   or temperature -> min_p -> top_k (ties at the k-th value kept) -> top_p -> random draw.
// One Sampler per request (per choice when n > 1): it owns the request's RNG (seeded from
// SamplingParams::seed, so a seed reproduces the sequence) and the token history the
// penalties need. Cost is O(vocab) per call: no full sort, even for top_p without top_k.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "sampling/sampling_params.h"

namespace qinfer::sampling {

struct TokenLogprob {
  int32_t token;
  float logprob;
};

struct SampleResult {
  int32_t token = -1;
  // Only filled when SamplingParams::top_logprobs >= 0:
  float logprob = 0.0f;            // the chosen token's raw logprob
  int32_t rank = 0;                // 1 + number of tokens with a larger raw logprob
  std::vector<TokenLogprob> top;   // top_logprobs entries, most likely first (lower id on ties)
  bool draft_accepted = false;     // sample() given a draft token: whether it was kept
};

class Sampler {
 public:
  // vocab_size: number of real tokens. Rows may be longer (padded lm_head); ids >= vocab_size
  // are ignored entirely (never sampled, not part of the logprob normalisation).
  // prompt_tokens feed the repetition penalty. Validates params (throws qinfer::Error).
  Sampler(SamplingParams params, int32_t vocab_size, std::span<const int32_t> prompt_tokens = {});

  // Samples one token from logits (size >= vocab_size) and records it as an output token.
  // Throws qinfer::Error if the row is too short, contains NaN, or has no finite entry.
  // allowed (optional, structured outputs): a bitset over the vocabulary; tokens whose bit is
  // clear get -inf before logit_bias, penalties, temperature, top-k/top-p. Raw logprobs stay
  // those of the unmodified row.
  SampleResult sample(std::span<const float> logits, const uint64_t* allowed = nullptr);

  // Speculative verification of a draft token that was chosen deterministically (the
  // draft distribution q is one-hot on `draft`): greedy keeps it when it is the argmax;
  // random sampling keeps it with probability p(draft) (= min(1, p/q)) under the same
  // processed distribution p as sample() (penalties, temperature, min_p, top_k, top_p),
  // and otherwise draws from norm(max(p - q, 0)) = p without the draft. The returned token
  // is therefore distributed exactly as sample()'s. draft < 0: plain sample(). allowed: as
  // for sample() (a draft outside the grammar mask has p = 0 and is always rejected).
  SampleResult verify_draft(std::span<const float> logits, int32_t draft, const uint64_t* allowed = nullptr);

  // Records a token that was produced without sample() (e.g. forced), for the penalties.
  void record(int32_t token);

  const SamplingParams& params() const { return params_; }
  size_t num_output_tokens() const { return num_output_; }

 private:
  bool needs_work_copy() const;
  void apply_bias_and_penalties();
  void apply_mask(const uint64_t* allowed);
  int32_t sample_random(const float* x, float max_logit, int32_t draft, bool* accepted);
  void apply_top_p(float mx);
  double uniform01();

  SamplingParams params_;
  int32_t vocab_;
  std::mt19937_64 rng_;
  std::vector<float> work_;
  // Token history for the penalties (only kept when the matching penalty is active).
  std::vector<uint8_t> seen_mask_;          // prompt ∪ output, for repetition_penalty
  std::vector<int32_t> seen_list_;
  std::unordered_map<int32_t, uint32_t> output_counts_;  // for presence/frequency
  size_t num_output_ = 0;
  // Scratch for the random path.
  struct Candidate {
    float logit;
    int32_t token;
    float weight;  // exp((logit - max) / temperature)
  };
  std::vector<Candidate> cand_;
};

}  // namespace qinfer::sampling
