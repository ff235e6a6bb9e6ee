#include "engine/seq_sampler.h"

#include "sampling/sampler.h"

namespace qinfer::engine {

struct SeqSampler::Impl {
  sampling::Sampler sampler;
  int vocab;
  Impl(sampling::SamplingParams p, int v, const std::vector<int32_t>& prompt)
      : sampler(std::move(p), v, std::span<const int32_t>(prompt.data(), prompt.size())), vocab(v) {}
};

SeqSampler::SeqSampler(const GenParams& g, const std::vector<int>& prompt, int vocab) {
  sampling::SamplingParams p;
  p.temperature = static_cast<float>(g.temperature);
  p.top_k = g.top_k;
  p.top_p = static_cast<float>(g.top_p);
  p.min_p = static_cast<float>(g.min_p);
  p.repetition_penalty = static_cast<float>(g.repetition_penalty);
  p.presence_penalty = static_cast<float>(g.presence_penalty);
  p.frequency_penalty = static_cast<float>(g.frequency_penalty);
  if (g.seed) p.seed = static_cast<int64_t>(*g.seed);
  for (const auto& [id, bias] : g.logit_bias) p.logit_bias.emplace_back(id, bias);
  p.top_logprobs = g.logprobs;
  p.validate(vocab);
  std::vector<int32_t> pr(prompt.begin(), prompt.end());
  impl_ = std::make_unique<Impl>(std::move(p), vocab, pr);
}

SeqSampler::~SeqSampler() = default;

int SeqSampler::sample(const float* logits, TokenOut* info, const uint64_t* allowed) {
  sampling::SampleResult r = impl_->sampler.sample(std::span<const float>(logits, impl_->vocab), allowed);
  if (info) {
    info->token = r.token;
    info->logprob = r.logprob;
    info->rank = r.rank;
    info->top.clear();
    for (const auto& t : r.top) info->top.push_back({t.token, t.logprob});
  }
  return r.token;
}

}  // namespace qinfer::engine
