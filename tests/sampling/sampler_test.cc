#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>

#include "util/error.h"

namespace qinfer::sampling {
namespace {

std::vector<float> random_logits(size_t n, uint64_t seed, float scale = 3.0f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Logits whose softmax is exactly the given probabilities.
std::vector<float> logits_for(const std::vector<double>& probs) {
  std::vector<float> v;
  for (double p : probs) v.push_back(float(std::log(p)));
  return v;
}

std::map<int32_t, int> histogram(Sampler& s, const std::vector<float>& logits, int n) {
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) ++h[s.sample(logits).token];
  return h;
}

std::set<int32_t> support(const std::map<int32_t, int>& h) {
  std::set<int32_t> s;
  for (const auto& [k, v] : h) s.insert(k);
  return s;
}

SamplingParams seeded(int64_t seed = 1234) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p, 6);
  EXPECT_EQ(s.sample(std::vector<float>{1, 5, 2, 5, -1, 0}).token, 1);
  EXPECT_EQ(s.sample(std::vector<float>{-3, -2, -2, -7, -9, -2}).token, 1);
}

TEST(Sampler, TopK1EqualsGreedy) {
  SamplingParams g;
  g.temperature = 0.0f;
  SamplingParams k = seeded(7);
  k.top_k = 1;
  k.temperature = 1.5f;
  Sampler sg(g, 1000), sk(k, 1000);
  for (uint64_t i = 0; i < 50; ++i) {
    auto logits = random_logits(1000, i);
    EXPECT_EQ(sk.sample(logits).token, sg.sample(logits).token) << "row " << i;
  }
}

TEST(Sampler, FrequenciesFollowSoftmaxOfScaledLogits) {
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -1.0f};
  for (float t : {1.0f, 0.5f, 2.0f}) {
    SamplingParams p = seeded(99);
    p.temperature = t;
    Sampler s(p, 4);
    const int n = 20000;
    auto h = histogram(s, logits, n);
    double z = 0;
    for (float l : logits) z += std::exp(l / t);
    for (int i = 0; i < 4; ++i) {
      const double expect = std::exp(logits[size_t(i)] / t) / z;
      const double sigma = std::sqrt(expect * (1 - expect) / n);
      EXPECT_NEAR(double(h[i]) / n, expect, 4 * sigma + 1e-3) << "T=" << t << " token " << i;
    }
  }
}

TEST(Sampler, TopPRestrictsSupportToSmallestPrefixReachingP) {
  const auto logits = logits_for({0.05, 0.5, 0.15, 0.3});  // sorted: 1, 3, 2, 0
  {
    SamplingParams p = seeded();
    p.top_p = 0.79f;  // mass above token 2 is 0.8 >= 0.79: token 2 dropped
    Sampler s(p, 4);
    auto h = histogram(s, logits, 4000);
    EXPECT_EQ(support(h), (std::set<int32_t>{1, 3}));
    EXPECT_NEAR(h[1] / 4000.0, 0.5 / 0.8, 0.03);  // renormalised over the kept set
  }
  {
    SamplingParams p = seeded();
    p.top_p = 0.81f;
    Sampler s(p, 4);
    EXPECT_EQ(support(histogram(s, logits, 4000)), (std::set<int32_t>{1, 2, 3}));
  }
  {
    SamplingParams p = seeded();
    p.top_p = 0.3f;  // the top token alone always survives
    Sampler s(p, 4);
    EXPECT_EQ(support(histogram(s, logits, 500)), (std::set<int32_t>{1}));
  }
}

TEST(Sampler, TopPOnLargeVocabularyMatchesFullSortReference) {
  // Flat-ish large row: exercises the chunked partial sort past its first chunks.
  const size_t V = 20000;
  auto logits = random_logits(V, 5, 1.0f);
  const float top_p = 0.3f;
  std::vector<std::pair<float, int32_t>> ref;
  for (size_t i = 0; i < V; ++i) ref.emplace_back(logits[i], int32_t(i));
  std::sort(ref.begin(), ref.end(), [](auto a, auto b) { return a.first > b.first; });
  double z = 0;
  for (auto& r : ref) z += std::exp(double(r.first));
  std::set<int32_t> allowed;
  double above = 0;
  for (auto& r : ref) {
    if (above >= top_p * z) break;
    allowed.insert(r.second);
    above += std::exp(double(r.first));
  }
  SamplingParams p = seeded(3);
  p.top_p = top_p;
  Sampler s(p, int32_t(V));
  std::set<int32_t> got;
  for (int i = 0; i < 1000; ++i) got.insert(s.sample(logits).token);
  for (int32_t t : got) EXPECT_TRUE(allowed.count(t)) << t;
  // The kept set is large; a few thousand draws should hit a good share of it.
  EXPECT_GT(got.size(), std::min<size_t>(allowed.size() / 4, 300));
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTopProbability) {
  const auto logits = logits_for({0.5, 0.3, 0.15, 0.05});
  SamplingParams p = seeded();
  p.min_p = 0.25f;  // threshold 0.125
  Sampler s(p, 4);
  EXPECT_EQ(support(histogram(s, logits, 4000)), (std::set<int32_t>{0, 1, 2}));
  p.min_p = 0.35f;  // threshold 0.175
  Sampler s2(p, 4);
  EXPECT_EQ(support(histogram(s2, logits, 4000)), (std::set<int32_t>{0, 1}));
  // min_p applies after temperature: at T=0.5 the probabilities are 0.25:0.09:0.0225:0.0025
  // (relative), so 0.15 drops below 0.25 * p_max.
  p.min_p = 0.25f;
  p.temperature = 0.5f;
  Sampler s3(p, 4);
  EXPECT_EQ(support(histogram(s3, logits, 4000)), (std::set<int32_t>{0, 1}));
}

TEST(Sampler, TopKKeepsTiesAtTheKthValue) {
  SamplingParams p = seeded();
  p.top_k = 2;
  Sampler s(p, 5);
  EXPECT_EQ(support(histogram(s, {3.0f, 1.0f, 1.0f, 0.0f, 1.0f}, 3000)), (std::set<int32_t>{0, 1, 2, 4}));
  SamplingParams q = seeded();
  q.top_k = 2;
  Sampler s2(q, 5);
  EXPECT_EQ(support(histogram(s2, {3.0f, 1.0f, 2.0f, 0.0f, 1.5f}, 3000)), (std::set<int32_t>{0, 2}));
}

TEST(Sampler, TopKDisabledByZeroAndMinusOne) {
  for (int k : {0, -1}) {
    SamplingParams p = seeded();
    p.top_k = k;
    Sampler s(p, 3);
    EXPECT_EQ(support(histogram(s, {0.0f, 0.0f, 0.0f}, 600)), (std::set<int32_t>{0, 1, 2}));
  }
}

TEST(Sampler, RepetitionPenaltyOverPromptAndOutputChangesArgmax) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.2f;
  {
    const std::vector<int32_t> prompt = {0};
    Sampler s(p, 2, prompt);
    EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}).token, 1);  // 2/1.2 < 1.9
  }
  {
    const std::vector<int32_t> prompt = {0};
    Sampler s(p, 2, prompt);
    EXPECT_EQ(s.sample(std::vector<float>{-1.0f, -1.1f}).token, 1);  // -1*1.2 < -1.1
  }
  {
    Sampler s(p, 2);  // no prompt: the first pick is unpenalised, then it is penalised
    EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}).token, 0);
    EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}).token, 1);
  }
  {
    SamplingParams none = p;
    none.repetition_penalty = 1.0f;
    const std::vector<int32_t> prompt = {0};
    Sampler s(none, 2, prompt);
    EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}).token, 0);
  }
}

TEST(Sampler, PresenceAndFrequencyPenaltiesUseOutputTokensOnly) {
  const std::vector<float> logits = {2.0f, 1.6f};
  SamplingParams p;
  p.temperature = 0.0f;
  p.presence_penalty = 2.0f;
  const std::vector<int32_t> prompt = {0, 0, 0};
  Sampler s(p, 2, prompt);
  EXPECT_EQ(s.sample(logits).token, 0);  // prompt occurrences do not count
  EXPECT_EQ(s.sample(logits).token, 1);  // 2.0 - 2.0 < 1.6
  SamplingParams f;
  f.temperature = 0.0f;
  f.frequency_penalty = 0.15f;
  Sampler sf(f, 2);
  sf.record(0);
  sf.record(0);
  EXPECT_EQ(sf.sample(logits).token, 0);  // 2.0 - 0.30 = 1.70 > 1.6; now three times
  EXPECT_EQ(sf.sample(logits).token, 1);  // 2.0 - 0.45 = 1.55 < 1.6
  SamplingParams neg;
  neg.temperature = 0.0f;
  neg.presence_penalty = -1.0f;  // negative penalties encourage repetition
  Sampler sn(neg, 2);
  sn.record(1);
  EXPECT_EQ(sn.sample(logits).token, 1);
}

TEST(Sampler, LogitBiasIsAddedAndClamped) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logit_bias = {{2, 1.5f}};
  Sampler s(p, 3);
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 0.0f, 0.0f}).token, 2);
  p.logit_bias = {{2, 1000.0f}};  // clamped to +100: not enough against a +150 lead
  Sampler s2(p, 3);
  EXPECT_EQ(s2.sample(std::vector<float>{150.0f, 0.0f, 0.0f}).token, 0);
  p.logit_bias = {{0, -1000.0f}};
  Sampler s3(p, 3);
  EXPECT_EQ(s3.sample(std::vector<float>{50.0f, 0.0f, 0.0f}).token, 1);
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferentSequence) {
  auto run = [](int64_t seed) {
    SamplingParams p = seeded(seed);
    p.top_k = 50;
    p.top_p = 0.9f;
    p.temperature = 0.8f;
    p.presence_penalty = 0.5f;
    Sampler s(p, 5000);
    std::vector<int32_t> out;
    for (uint64_t i = 0; i < 40; ++i) out.push_back(s.sample(random_logits(5000, 100 + i, 1.0f)).token);
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, LogprobsComeFromUnmodifiedLogits) {
  const size_t V = 20;
  auto logits = random_logits(V, 11);
  SamplingParams p = seeded();
  p.temperature = 0.3f;
  p.top_k = 3;
  p.logit_bias = {{5, 7.0f}};
  p.repetition_penalty = 1.7f;
  p.top_logprobs = 20;
  const std::vector<int32_t> prompt = {1, 2, 3};
  Sampler s(p, int32_t(V), prompt);
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  auto r = s.sample(logits);
  ASSERT_EQ(r.top.size(), V);
  double total = 0;
  for (size_t i = 0; i < V; ++i) {
    const auto& t = r.top[i];
    EXPECT_NEAR(t.logprob, double(logits[size_t(t.token)]) - std::log(z), 1e-5);
    if (i > 0) {
      EXPECT_GE(r.top[i - 1].logprob, t.logprob);
    }
    total += std::exp(double(t.logprob));
  }
  EXPECT_NEAR(total, 1.0, 1e-5);
  EXPECT_NEAR(r.logprob, double(logits[size_t(r.token)]) - std::log(z), 1e-5);
  int greater = 0;
  for (float l : logits) greater += l > logits[size_t(r.token)];
  EXPECT_EQ(r.rank, greater + 1);
}

TEST(Sampler, LogprobsTopNAndZero) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_logprobs = 2;
  Sampler s(p, 4);
  auto r = s.sample(std::vector<float>{0.0f, 3.0f, 3.0f, 1.0f});
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_EQ(r.top[0].token, 1);  // lower id first on ties
  EXPECT_EQ(r.top[1].token, 2);
  EXPECT_EQ(r.rank, 1);
  p.top_logprobs = 0;
  Sampler s0(p, 4);
  auto r0 = s0.sample(std::vector<float>{0.0f, 3.0f, 3.0f, 1.0f});
  EXPECT_TRUE(r0.top.empty());
  EXPECT_LT(r0.logprob, 0.0f);
  p.top_logprobs = -1;
  Sampler sn(p, 4);
  EXPECT_EQ(sn.sample(std::vector<float>{0.0f, 3.0f, 3.0f, 1.0f}).logprob, 0.0f);
}

TEST(Sampler, PaddedRowEntriesAreIgnored) {
  SamplingParams p = seeded();
  p.top_logprobs = 3;
  Sampler s(p, 3);
  const std::vector<float> row = {0.0f, 0.0f, 0.0f, 100.0f, 100.0f};
  for (int i = 0; i < 200; ++i) {
    auto r = s.sample(row);
    EXPECT_LT(r.token, 3);
    EXPECT_NEAR(r.logprob, std::log(1.0 / 3), 1e-6);
  }
}

TEST(Sampler, BadRowsGiveErrors) {
  Sampler s(SamplingParams{}, 4);
  EXPECT_THROW(s.sample(std::vector<float>{1, 2}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{1, NAN, 0, 0}), Error);
  const float ninf = -INFINITY;
  EXPECT_THROW(s.sample(std::vector<float>{ninf, ninf, ninf, ninf}), Error);
  EXPECT_THROW(s.record(4), Error);
  // Some -inf entries are fine: they are never picked.
  Sampler g(seeded(), 4);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(g.sample(std::vector<float>{ninf, 0.0f, ninf, ninf}).token, 1);
}

void expect_field_error(const SamplingParams& p, const std::string& field) {
  try {
    p.validate(100);
    ADD_FAILURE() << "no error for " << field;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(SamplingParams, ValidationNamesTheField) {
  SamplingParams ok;
  EXPECT_NO_THROW(ok.validate(100));
  auto with = [](auto f) {
    SamplingParams p;
    f(p);
    return p;
  };
  expect_field_error(with([](auto& p) { p.temperature = -0.1f; }), "temperature");
  expect_field_error(with([](auto& p) { p.temperature = NAN; }), "temperature");
  expect_field_error(with([](auto& p) { p.top_p = 0.0f; }), "top_p");
  expect_field_error(with([](auto& p) { p.top_p = 1.01f; }), "top_p");
  expect_field_error(with([](auto& p) { p.top_k = -2; }), "top_k");
  expect_field_error(with([](auto& p) { p.min_p = 1.5f; }), "min_p");
  expect_field_error(with([](auto& p) { p.repetition_penalty = 0.0f; }), "repetition_penalty");
  expect_field_error(with([](auto& p) { p.presence_penalty = 2.5f; }), "presence_penalty");
  expect_field_error(with([](auto& p) { p.frequency_penalty = -3.0f; }), "frequency_penalty");
  expect_field_error(with([](auto& p) { p.top_logprobs = 21; }), "top_logprobs");
  expect_field_error(with([](auto& p) { p.logit_bias = {{100, 1.0f}}; }), "logit_bias");
  expect_field_error(with([](auto& p) { p.logit_bias = {{-1, 1.0f}}; }), "logit_bias");
  EXPECT_THROW(Sampler(with([](auto& p) { p.top_p = 0.0f; }), 10), Error);
  const std::vector<int32_t> bad_prompt = {11};
  SamplingParams rp;
  rp.repetition_penalty = 1.1f;
  EXPECT_THROW(Sampler(rp, 10, bad_prompt), Error);
}

}  // namespace
}  // namespace qinfer::sampling

namespace qinfer::sampling {
namespace {

// Verifying a one-hot draft: many seeded draws of one step give the target's own
// distribution (after temperature / top_k / top_p), whatever the draft, and the draft is
// accepted with probability p(draft).
TEST(SamplerDraft, RejectionSamplingKeepsTheTargetDistribution) {
  const std::vector<double> probs = {0.05, 0.30, 0.02, 0.18, 0.25, 0.07, 0.10, 0.03};
  const std::vector<float> logits = logits_for(probs);
  struct Case {
    float temperature;
    int top_k;
    float top_p;
  };
  for (const Case c : {Case{1.0f, -1, 1.0f}, Case{0.7f, 5, 1.0f}, Case{1.3f, -1, 0.8f}}) {
    // The processed target distribution, from plain sampling's rules.
    std::vector<double> w(probs.size());
    for (size_t i = 0; i < probs.size(); ++i) w[i] = std::exp(std::log(probs[i]) / c.temperature);
    std::vector<size_t> order(probs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return w[a] > w[b]; });
    double z = 0;
    for (double x : w) z += x;
    std::vector<double> target(probs.size(), 0.0);
    double above = 0;
    for (size_t r = 0; r < order.size(); ++r) {
      const bool in_k = c.top_k < 0 || static_cast<int>(r) < c.top_k;
      const bool in_p = r == 0 || above < c.top_p * z;
      if (in_k && in_p) target[order[r]] = w[order[r]];
      above += w[order[r]];
    }
    double tz = 0;
    for (double x : target) tz += x;
    for (double& x : target) x /= tz;
    for (int32_t draft : {1, 4, 2, 7}) {
      const int N = 40000;
      std::vector<int> count(probs.size(), 0);
      int accepted = 0;
      for (int i = 0; i < N; ++i) {
        SamplingParams p;
        p.temperature = c.temperature;
        p.top_k = c.top_k;
        p.top_p = c.top_p;
        p.seed = 1000 + i;
        Sampler s(p, static_cast<int32_t>(probs.size()));
        SampleResult r = s.verify_draft(logits, draft);
        ++count[r.token];
        accepted += r.draft_accepted;
        EXPECT_EQ(r.draft_accepted, r.token == draft);
      }
      for (size_t t = 0; t < probs.size(); ++t) {
        const double f = double(count[t]) / N, sd = std::sqrt(target[t] * (1 - target[t]) / N);
        EXPECT_NEAR(f, target[t], 5 * sd + 1e-9) << "T " << c.temperature << " top_k " << c.top_k << " top_p "
                                                 << c.top_p << " draft " << draft << " token " << t;
      }
      const double pd = target[draft], sd = std::sqrt(pd * (1 - pd) / N);
      EXPECT_NEAR(double(accepted) / N, pd, 5 * sd + 1e-9) << "acceptance of draft " << draft;
    }
  }
}

TEST(SamplerDraft, GreedyKeepsOnlyTheArgmaxAndSeedsReproduce) {
  const std::vector<float> logits = random_logits(300, 5);
  const int32_t best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  SamplingParams g;
  g.temperature = 0;
  Sampler s(g, 300);
  SampleResult a = s.verify_draft(logits, best), b = s.verify_draft(logits, (best + 1) % 300);
  EXPECT_TRUE(a.draft_accepted);
  EXPECT_EQ(a.token, best);
  EXPECT_FALSE(b.draft_accepted);
  EXPECT_EQ(b.token, best);
  SamplingParams r;
  r.temperature = 0.8f;
  r.seed = 42;
  Sampler s1(r, 300), s2(r, 300);
  for (int i = 0; i < 50; ++i) {
    const int32_t d = (i * 37) % 300;
    SampleResult x = s1.verify_draft(logits, d), y = s2.verify_draft(logits, d);
    EXPECT_EQ(x.token, y.token);
    EXPECT_EQ(x.draft_accepted, y.draft_accepted);
  }
}

}  // namespace
}  // namespace qinfer::sampling
