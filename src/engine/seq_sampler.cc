#include "engine/seq_sampler.h"

#include <atomic>

#include "sampling/sampler.h"
#include "util/error.h"

namespace qinfer::engine {

namespace {
std::atomic<int64_t> g_live_samplers{0};
}  // namespace

struct SeqSampler::Impl {
  sampling::Sampler sampler;
  int vocab;
  Impl(sampling::SamplingParams p, int v, const std::vector<int32_t>& prompt)
      : sampler(std::move(p), v, std::span<const int32_t>(prompt.data(), prompt.size())), vocab(v) {
    ++g_live_samplers;
  }
  ~Impl() { --g_live_samplers; }
};

int64_t SeqSampler::live_samplers() { return g_live_samplers.load(); }

struct SeqSampler::Pending {
  sampling::SamplingParams params;
  int vocab;
  std::vector<int32_t> prompt;  // only when a repetition penalty needs it
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
  for (int t : prompt)
    if (t < 0 || t >= vocab) fail("sampler: prompt token id ", t, " is out of range [0, ", vocab, ")");
  pending_ = std::make_unique<Pending>();
  if (p.repetition_penalty != 1.0f) pending_->prompt.assign(prompt.begin(), prompt.end());
  pending_->params = std::move(p);
  pending_->vocab = vocab;
}

SeqSampler::~SeqSampler() = default;

void SeqSampler::ensure_impl() {
  if (impl_) return;
  impl_ = std::make_unique<Impl>(std::move(pending_->params), pending_->vocab, pending_->prompt);
  pending_.reset();
}

int SeqSampler::sample(const float* logits, TokenOut* info, const uint64_t* allowed) {
  bool accepted = false;
  return sample_draft(logits, -1, info, &accepted, allowed);
}

int SeqSampler::sample_draft(const float* logits, int draft, TokenOut* info, bool* accepted,
                             const uint64_t* allowed) {
  ensure_impl();
  sampling::SampleResult r =
      impl_->sampler.verify_draft(std::span<const float>(logits, impl_->vocab), draft, allowed);
  *accepted = r.draft_accepted;
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
