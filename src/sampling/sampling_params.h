// SamplingParams: the per-request sampling knobs of the OpenAI / vLLM API, with vLLM's
// validation rules. Every violation throws qinfer::Error naming the request field.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace qinfer::sampling {

// Temperatures below this are greedy (vLLM's _SAMPLING_EPS).
inline constexpr float kGreedyTemperature = 1e-5f;
// Most top logprobs a request may ask for (vLLM's default max_logprobs).
inline constexpr int kMaxTopLogprobs = 20;

struct SamplingParams {
  float temperature = 1.0f;         // >= 0; < 1e-5 means greedy (argmax, lowest id on ties)
  int32_t top_k = 0;                // 0 or -1: disabled; else keep the k largest (ties kept)
  float top_p = 1.0f;               // (0, 1]
  float min_p = 0.0f;               // [0, 1]; relative to the most likely token, after temperature
  float repetition_penalty = 1.0f;  // > 0; HF/vLLM: over prompt and output tokens
  float presence_penalty = 0.0f;    // [-2, 2]; OpenAI: over output tokens
  float frequency_penalty = 0.0f;   // [-2, 2]; OpenAI: over output tokens
  std::optional<int64_t> seed;      // per-request RNG seed; random when absent
  // (token id, bias) pairs added to the logits before penalties; bias is clamped to [-100, 100].
  std::vector<std::pair<int32_t, float>> logit_bias;
  // -1: no logprobs. 0..20: return the sampled token's logprob plus this many top logprobs,
  // computed from the unmodified logits (vLLM "raw_logprobs").
  int32_t top_logprobs = -1;

  bool greedy() const { return temperature < kGreedyTemperature; }
  bool top_k_enabled() const { return top_k > 0; }

  // Throws qinfer::Error naming the offending field ("top_p", "logit_bias[5]", ...).
  // vocab_size bounds the logit_bias token ids.
  void validate(int32_t vocab_size) const;
};

}  // namespace qinfer::sampling
