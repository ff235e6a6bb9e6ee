#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

#include "util/error.h"

namespace qinfer::sampling {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ uint64_t(rd());
}

// Larger logit first; lower token id first among equal logits.
bool before(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

Sampler::Sampler(SamplingParams params, int32_t vocab_size, std::span<const int32_t> prompt_tokens)
    : params_(std::move(params)), vocab_(vocab_size) {
  if (vocab_size <= 0) fail("sampler: vocabulary size must be positive, got ", vocab_size);
  params_.validate(vocab_size);
  for (auto& [tok, bias] : params_.logit_bias) bias = std::clamp(bias, -100.0f, 100.0f);
  rng_.seed(params_.seed ? uint64_t(*params_.seed) : fresh_seed());
  if (params_.repetition_penalty != 1.0f) {
    seen_mask_.assign(size_t(vocab_), 0);
    for (int32_t t : prompt_tokens) {
      if (t < 0 || t >= vocab_) fail("sampler: prompt token id ", t, " is out of range [0, ", vocab_, ")");
      if (!seen_mask_[size_t(t)]) {
        seen_mask_[size_t(t)] = 1;
        seen_list_.push_back(t);
      }
    }
  }
}

void Sampler::record(int32_t token) {
  if (token < 0 || token >= vocab_) fail("sampler: token id ", token, " is out of range [0, ", vocab_, ")");
  ++num_output_;
  if (!seen_mask_.empty() && !seen_mask_[size_t(token)]) {
    seen_mask_[size_t(token)] = 1;
    seen_list_.push_back(token);
  }
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) ++output_counts_[token];
}

bool Sampler::needs_work_copy() const {
  return !params_.logit_bias.empty() || !seen_list_.empty() || !output_counts_.empty();
}

void Sampler::apply_bias_and_penalties() {
  for (const auto& [tok, bias] : params_.logit_bias) work_[size_t(tok)] += bias;
  const float r = params_.repetition_penalty;
  for (int32_t t : seen_list_) {
    float& v = work_[size_t(t)];
    v = v > 0.0f ? v / r : v * r;
  }
  for (const auto& [t, count] : output_counts_)
    work_[size_t(t)] -= params_.frequency_penalty * float(count) + params_.presence_penalty;
}

void Sampler::apply_mask(const uint64_t* allowed) {
  const size_t V = size_t(vocab_);
  bool any = false;
  for (size_t w = 0; w * 64 < V; ++w) {
    const uint64_t bits = allowed[w];
    const size_t end = std::min(V, w * 64 + 64);
    if (bits == ~uint64_t(0) && end == w * 64 + 64) {
      any = true;
      continue;
    }
    for (size_t i = w * 64; i < end; ++i) {
      if (!((bits >> (i & 63)) & 1)) work_[i] = kNegInf;
      else any = any || work_[i] != kNegInf;
    }
  }
  if (!any) fail("sampler: the structured-output grammar allows no token here");
}

double Sampler::uniform01() { return double(rng_() >> 11) * 0x1.0p-53; }

// top_p: keep the most likely candidates while the probability mass strictly above them is
// < top_p (vLLM masks ascending-cumsum <= 1 - top_p, keeping at least one). Instead of sorting
// the whole vocabulary, candidates are bucketed by logit; only the bucket where the running
// mass crosses top_p is sorted.
void Sampler::apply_top_p(float mx) {
  float mn = mx;
  double z = 0.0;
  for (const auto& c : cand_) {
    mn = std::min(mn, c.logit);
    z += c.weight;
  }
  const double need = double(params_.top_p) * z;
  constexpr size_t kBuckets = 2048;
  const size_t nb = cand_.size() <= 256 || mx == mn ? 1 : kBuckets;
  const double scale = nb == 1 ? 0.0 : double(nb - 1) / double(mx - mn);
  auto bucket_of = [&](const Candidate& c) {
    return std::min(nb - 1, size_t(double(mx - c.logit) * scale));
  };
  std::vector<double> mass(nb, 0.0);
  for (const auto& c : cand_) mass[bucket_of(c)] += c.weight;
  size_t crossing = nb - 1;
  double above = 0.0;
  for (size_t b = 0; b < nb; ++b) {
    if (above + mass[b] >= need) {
      crossing = b;
      break;
    }
    above += mass[b];
  }
  // Every bucket before `crossing` survives whole; walk `crossing` in order.
  auto mid = std::partition(cand_.begin(), cand_.end(),
                            [&](const Candidate& c) { return bucket_of(c) < crossing; });
  auto last = std::partition(mid, cand_.end(),
                             [&](const Candidate& c) { return bucket_of(c) == crossing; });
  std::sort(mid, last, [](const Candidate& a, const Candidate& b) {
    return before({a.logit, a.token}, {b.logit, b.token});
  });
  auto keep = mid;
  while (keep != last && (keep == cand_.begin() || above < need)) {
    above += keep->weight;
    ++keep;
  }
  cand_.erase(keep, cand_.end());
}

int32_t Sampler::sample_random(const float* x, float mx, int32_t draft, bool* accepted) {
  const size_t V = size_t(vocab_);
  const float inv_t = 1.0f / params_.temperature;

  // min_p: p_i >= min_p * p_max  <=>  x_i >= mx + T * log(min_p).
  float thr = kNegInf;
  if (params_.min_p > 0.0f) thr = mx + params_.temperature * std::log(params_.min_p);

  // top_k: raise the threshold to the k-th largest surviving logit (ties at it survive).
  if (params_.top_k_enabled() && size_t(params_.top_k) < V) {
    std::priority_queue<float, std::vector<float>, std::greater<float>> heap;
    const size_t k = size_t(params_.top_k);
    for (size_t i = 0; i < V; ++i) {
      const float v = x[i];
      if (!(v >= thr) || v == kNegInf) continue;
      if (heap.size() < k) {
        heap.push(v);
      } else if (v > heap.top()) {
        heap.pop();
        heap.push(v);
      }
    }
    if (heap.size() == k) thr = std::max(thr, heap.top());
  }

  // Candidates with unnormalised probabilities relative to the maximum (which always survives).
  cand_.clear();
  for (size_t i = 0; i < V; ++i) {
    const float v = x[i];
    if (v >= thr && v != kNegInf) cand_.push_back({v, int32_t(i), std::exp((v - mx) * inv_t)});
  }
  if (params_.top_p < 1.0f && cand_.size() > 1) apply_top_p(mx);

  double total = 0.0, draft_w = 0.0;
  for (const auto& c : cand_) {
    total += c.weight;
    if (c.token == draft) draft_w = c.weight;
  }
  if (draft >= 0) {
    // Accept with probability p(draft); else sample from p with the draft removed.
    if (uniform01() * total < draft_w) {
      *accepted = true;
      return draft;
    }
    if (draft_w > 0.0) {
      cand_.erase(std::remove_if(cand_.begin(), cand_.end(), [&](const Candidate& c) { return c.token == draft; }),
                  cand_.end());
      total -= draft_w;
      if (cand_.empty() || !(total > 0.0)) {   // p was (numerically) all on the draft
        *accepted = true;
        return draft;
      }
    }
  }
  const double u = uniform01() * total;
  double acc = 0.0;
  for (const auto& c : cand_) {
    acc += c.weight;
    if (acc > u) return c.token;
  }
  return cand_.back().token;
}

SampleResult Sampler::sample(std::span<const float> logits, const uint64_t* allowed) {
  return verify_draft(logits, -1, allowed);
}

SampleResult Sampler::verify_draft(std::span<const float> logits, int32_t draft, const uint64_t* allowed) {
  const size_t V = size_t(vocab_);
  if (logits.size() < V)
    fail("sampler: logits row has ", logits.size(), " entries, expected at least ", vocab_);
  const float* raw = logits.data();
  // One pass: NaN check, maximum, first index of the maximum.
  float raw_max = kNegInf;
  bool nan = false;
  for (size_t i = 0; i < V; ++i) {
    const float v = raw[i];
    nan |= v != v;
    raw_max = v > raw_max ? v : raw_max;
  }
  if (nan) {
    for (size_t i = 0; i < V; ++i)
      if (std::isnan(raw[i])) fail("sampler: logit of token ", i, " is NaN");
  }
  if (raw_max == kNegInf) fail("sampler: every logit is -inf");
  if (std::isinf(raw_max)) fail("sampler: a logit is +inf");

  const float* x = raw;
  if (allowed || needs_work_copy()) {
    work_.assign(raw, raw + V);
    if (allowed) apply_mask(allowed);
    apply_bias_and_penalties();
    x = work_.data();
  }

  SampleResult res;
  if (params_.greedy()) {
    if (x == raw) {
      res.token = int32_t(std::find(raw, raw + V, raw_max) - raw);  // lowest id on ties
    } else {
      res.token = int32_t(std::max_element(x, x + V) - x);
    }
  } else {
    res.token = sample_random(x, x == raw ? raw_max : *std::max_element(x, x + V), draft, &res.draft_accepted);
  }
  if (params_.greedy()) res.draft_accepted = draft >= 0 && res.token == draft;

  if (params_.top_logprobs >= 0) {
    double sum = 0.0;
    for (size_t i = 0; i < V; ++i) sum += std::exp(raw[i] - raw_max);
    const double lse = double(raw_max) + std::log(sum);
    const float chosen = raw[res.token];
    res.logprob = float(double(chosen) - lse);
    const size_t n = size_t(params_.top_logprobs);
    // Rank and the n best (logit, id) pairs in order; most entries fail the first compare.
    std::vector<std::pair<float, int32_t>> best;
    best.reserve(n + 1);
    int32_t greater = 0;
    for (size_t i = 0; i < V; ++i) {
      greater += raw[i] > chosen;
      if (n == 0) continue;
      const std::pair<float, int32_t> c{raw[i], int32_t(i)};
      if (best.size() == n && !before(c, best.back())) continue;
      best.insert(std::upper_bound(best.begin(), best.end(), c, before), c);
      if (best.size() > n) best.pop_back();
    }
    res.rank = greater + 1;
    for (const auto& [v, id] : best) res.top.push_back({id, float(double(v) - lse)});
  }
  record(res.token);
  return res;
}

}  // namespace qinfer::sampling
