// Adapter from the engine's GenParams to the sampling module: one per sequence,
// owning its RNG and token history (for penalties).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/gen_params.h"

namespace qinfer::engine {

class SeqSampler {
 public:
  // Validates the parameters (Error names the field). The sampler itself (with its
  // vocab-sized work buffers) is made on the first sample(), so a queued sequence costs
  // only its parameters.
  SeqSampler(const GenParams& p, const std::vector<int>& prompt, int vocab);
  ~SeqSampler();
  // Samplers made (holding vocab-sized buffers) and not yet destroyed, in the process: a
  // test hook showing that queued sequences hold none.
  static int64_t live_samplers();
  // Samples from a logits row (not modified); fills info (logprobs when requested).
  // allowed: optional token bitset of a structured-output grammar (sampling::Sampler).
  int sample(const float* logits, TokenOut* info, const uint64_t* allowed = nullptr);
  // Verifies a draft token (sampling::Sampler::verify_draft): the token to emit, and whether
  // it is the draft.
  int sample_draft(const float* logits, int draft, TokenOut* info, bool* accepted,
                   const uint64_t* allowed = nullptr);

 private:
  void ensure_impl();  // makes the sampler from pending_ on first use
  struct Impl;
  struct Pending;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<Pending> pending_;
};

}  // namespace qinfer::engine
