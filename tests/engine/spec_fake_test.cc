// Speculative decoding through the engine with the fake model (fake_runner.h), where the
// drafts are chosen by the test: a replay oracle drafts a known output (corrupted at
// chosen output positions), so full, partial and no acceptance all run. Checked: greedy
// output identical to plain decoding under batching of different lengths with a
// non-speculating request, EOS / stop strings / max_tokens landing inside an accepted
// run, a structured-output grammar, streaming counts, a failing draft source, the draft
// rows the engine hands the source (consistent with what was accepted), and sampled
// requests keeping the target's distribution (rejection sampling, many seeded runs).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "engine/engine.h"
#include "fake_runner.h"
#include "grammar/compiler.h"
#include "grammar/grammar.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace qinfer::engine {
namespace {

using testing::fake_greedy;
using testing::FakeRunner;
using testing::FakeStats;
using testing::kFakeVocab;

using Corrupt = std::function<bool(int64_t)>;

// Drafts output index i as known[prompt][i] (or a wrong token when corrupt(i)). It also
// keeps, per sequence, the draft rows' next tokens it was given and checks that they are
// always the sequence's context shifted by one: the rows of accepted tokens only.
class ReplayDrafts : public DraftSource {
 public:
  ReplayDrafts(std::map<std::vector<int>, std::vector<int>> known, Corrupt corrupt)
      : known_(std::move(known)), corrupt_(std::move(corrupt)) {}
  void propose(std::vector<DraftRequest>& reqs) override {
    for (auto& q : reqs) {
      ++requests;
      const std::vector<int>& ctx = *q.context;
      // Rows end at the last accepted token (a prefill chunk before the last: inside the prompt).
      if (q.k > 0) {
        EXPECT_EQ(q.pos0 + q.n, static_cast<int64_t>(ctx.size()) - 1);
        EXPECT_EQ(q.next_tokens[q.n - 1], ctx.back());
      }
      EXPECT_LE(q.pos0 + q.n, static_cast<int64_t>(ctx.size()) - 1);
      std::vector<int>& rows = rows_[q.seq];
      EXPECT_LE(q.pos0, static_cast<int64_t>(rows.size())) << "draft rows must be contiguous";
      rows.resize(static_cast<size_t>(q.pos0));
      rows.insert(rows.end(), q.next_tokens, q.next_tokens + q.n);
      EXPECT_TRUE(std::equal(rows.begin(), rows.end(), ctx.begin() + 1)) << "draft rows != accepted context";
      q.drafts.clear();
      if (q.k == 0) continue;
      const std::vector<int>* out = nullptr;
      size_t plen = 0;
      for (const auto& [p, o] : known_)
        if (ctx.size() >= p.size() && std::equal(p.begin(), p.end(), ctx.begin())) out = &o, plen = p.size();
      ASSERT_NE(out, nullptr) << "replay: unknown prompt";
      const int64_t done = static_cast<int64_t>(ctx.size() - plen);   // output tokens so far
      for (int i = 0; i < q.k; ++i) {
        const int64_t idx = done + i;
        int tok = idx < static_cast<int64_t>(out->size()) ? (*out)[idx] : 1;
        if (corrupt_(idx)) tok = 1 + (tok % (kFakeVocab - 3));   // another id, never the poison one
        q.drafts.push_back(tok);
      }
    }
  }
  int64_t requests = 0;

 private:
  std::map<std::vector<int>, std::vector<int>> known_;
  Corrupt corrupt_;
  std::map<RunnerSequence*, std::vector<int>> rows_;
};

std::vector<int> prompt_of(int seed, int len) {
  std::vector<int> p;
  for (int i = 0; i < len; ++i) p.push_back(1 + (seed * 31 + i * 7) % 50);
  return p;
}

EngineOptions spec_options(int K, DraftSource* drafts) {
  EngineOptions o;
  o.max_num_seqs = 8;
  o.prefill_chunk = 16;   // long prompts prefill over several steps
  o.spec.method = "mtp";
  o.spec.num_speculative_tokens = K;
  o.spec.draft_override = drafts;
  return o;
}

GenParams greedy(int64_t n) {
  GenParams p;
  p.temperature = 0;
  p.max_tokens = n;
  return p;
}

// Drains a stream; checks the streamed completion counts along the way.
std::vector<int> drain(RequestStream& s, GenEvent* last = nullptr) {
  std::vector<int> got;
  GenEvent ev;
  while (true) {
    if (!s.take(ev, 5.0)) continue;
    for (const auto& t : ev.tokens) got.push_back(t.token);
    if (!ev.tokens.empty()) { EXPECT_EQ(ev.completion_tokens, static_cast<int64_t>(got.size())); }
    if (ev.finished) break;
  }
  if (last) *last = ev;
  return got;
}

const std::vector<std::pair<const char*, Corrupt>>& patterns() {
  static const std::vector<std::pair<const char*, Corrupt>> p = {
      {"none wrong", [](int64_t) { return false; }},
      {"all wrong", [](int64_t) { return true; }},
      {"every 3rd", [](int64_t i) { return i % 3 == 2; }},
      {"every 2nd", [](int64_t i) { return i % 2 == 1; }},
      {"4th and 9th", [](int64_t i) { return i == 4 || i == 9; }}};
  return p;
}

TEST(SpecFake, BatchedDifferentLengthsIdenticalToPlain) {
  // (prompt length, max_tokens): EOS (after token 7) ends some outputs early, inside a run.
  const std::vector<std::pair<int, int>> shapes = {{3, 5}, {17, 16}, {40, 23}, {9, 2}, {1, 30}, {25, 11}};
  std::map<std::vector<int>, std::vector<int>> known;
  std::vector<std::vector<int>> prompts, want;
  for (size_t i = 0; i < shapes.size(); ++i) {
    prompts.push_back(prompt_of(static_cast<int>(i) + 3, shapes[i].first));
    want.push_back(fake_greedy(prompts.back(), shapes[i].second));
    known[prompts.back()] = want.back();
  }
  int64_t accepted_total = 0;
  for (const auto& [name, corrupt] : patterns()) {
    for (int K = 1; K <= 4; ++K) {
      FakeStats st;
      ReplayDrafts oracle(known, corrupt);
      Engine e(std::make_unique<FakeRunner>(&st), nullptr, nullptr, spec_options(K, &oracle));
      std::vector<std::shared_ptr<RequestStream>> streams;
      for (size_t i = 0; i < prompts.size(); ++i) {
        GenParams p = greedy(shapes[i].second);
        p.speculate = i != 2;   // one request decodes without drafts in the same steps
        streams.push_back(e.submit(prompts[i], p));
      }
      for (size_t i = 0; i < prompts.size(); ++i) {
        GenEvent last;
        EXPECT_EQ(drain(*streams[i], &last), want[i]) << name << " K=" << K << " request " << i;
        EXPECT_EQ(last.reason, want[i].back() == testing::kFakeEos ? FinishReason::kStop : FinishReason::kLength)
            << name << " K=" << K << " request " << i;
      }
      const SpecDecodeStats sp = e.stats().spec;
      EXPECT_GT(oracle.requests, 0);
      EXPECT_GT(sp.num_drafts, 0) << name << " K=" << K;
      if (std::string(name) == "all wrong") { EXPECT_EQ(sp.num_accepted_tokens, 0); }
      if (std::string(name) == "none wrong") { EXPECT_GT(sp.acceptance_rate(), 0.5) << "K=" << K; }
      accepted_total += sp.num_accepted_tokens;
      // Some forward call held a verify run (more than one token) for a decoding sequence.
      bool multi = false;
      for (const auto& c : st.calls)
        for (int64_t n : c) multi |= n > 1 && n <= K + 1;
      EXPECT_TRUE(multi) << name << " K=" << K;
    }
  }
  EXPECT_GT(accepted_total, 0);
}

TEST(SpecFake, StopStringsInsideAnAcceptedRunEndThere) {
  auto tok = [] { return std::make_unique<Tokenizer>(Tokenizer::load(QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5")); };
  FakeStats st0;
  Engine plain(std::make_unique<FakeRunner>(&st0), tok(), nullptr, EngineOptions{});
  const std::vector<int> prompt = prompt_of(11, 6);
  GenParams base = greedy(24);
  base.ignore_eos = true;
  const GenResult ref = plain.generate(prompt, base);
  ASSERT_GE(ref.text.size(), 10u);
  std::map<std::vector<int>, std::vector<int>> known = {{prompt, ref.tokens}};
  for (int K : {2, 4}) {
    FakeStats st;
    ReplayDrafts oracle(known, [](int64_t) { return false; });   // every draft right: long accepted runs
    Engine spec(std::make_unique<FakeRunner>(&st), tok(), nullptr, spec_options(K, &oracle));
    for (size_t at = 1; at + 2 <= ref.text.size(); at += 3) {
      for (bool include : {false, true}) {
        GenParams p = base;
        p.stop = {ref.text.substr(at, 2)};
        p.include_stop_str_in_output = include;
        const GenResult a = spec.generate(prompt, p), b = plain.generate(prompt, p);
        EXPECT_EQ(a.tokens, b.tokens) << "K=" << K << " stop at " << at;
        EXPECT_EQ(a.text, b.text) << "K=" << K << " stop at " << at;
        EXPECT_EQ(a.reason, FinishReason::kStop);
        EXPECT_EQ(a.stop_str, b.stop_str);
        EXPECT_LE(a.tokens.size(), ref.tokens.size());
      }
    }
    // max_tokens at every length: the output is the plain prefix.
    for (int n = 1; n <= 13; ++n) {
      GenParams p = base;
      p.max_tokens = n;
      const GenResult a = spec.generate(prompt, p);
      EXPECT_EQ(a.tokens, std::vector<int>(ref.tokens.begin(), ref.tokens.begin() + n)) << "K=" << K << " n=" << n;
      EXPECT_EQ(a.reason, FinishReason::kLength);
    }
    EXPECT_GT(spec.stats().spec.num_accepted_tokens, 0);
  }
}

// Fake vocabulary for grammars: id k is the k-th character (as grammar_engine_test.cc).
const std::string kChars = "?-abcdefghijklmnopqrstuvwxyz0123456789{}[]\":, .ABCDEFGHIJKLMNOPQRSTUV!";

std::shared_ptr<const grammar::Grammar> compile(const std::string& regex) {
  std::vector<std::string> t(kFakeVocab);
  std::vector<bool> ex(t.size(), false);
  ex[0] = true;
  ex[testing::kFakePoison] = true;
  for (int i = 1; i < kFakeVocab; ++i) t[size_t(i)] = std::string(1, kChars[size_t(i)]);
  static grammar::Compiler c(std::make_shared<const grammar::TokenVocab>(t, ex));
  return c.compile({grammar::SpecKind::kRegex, regex, "test"});
}

TEST(SpecFake, GrammarMaskAppliesToEveryVerifiedRow) {
  const auto g = compile("[a-h]{3,6}-[0-9]{2,5}(x|yz)");
  FakeStats st0;
  Engine plain(std::make_unique<FakeRunner>(&st0), nullptr, nullptr, EngineOptions{});
  std::map<std::vector<int>, std::vector<int>> known;
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(prompt_of(20 + i, 5 + 3 * i));
    GenParams p = greedy(40);
    p.grammar = g;
    known[prompts.back()] = plain.generate(prompts.back(), p).tokens;
  }
  for (const auto& [name, corrupt] : patterns()) {
    for (int K : {1, 3, 4}) {
      FakeStats st;
      ReplayDrafts oracle(known, corrupt);
      Engine spec(std::make_unique<FakeRunner>(&st), nullptr, nullptr, spec_options(K, &oracle));
      for (const auto& pr : prompts) {
        GenParams p = greedy(40);
        p.grammar = g;
        const GenResult r = spec.generate(pr, p);
        EXPECT_EQ(r.tokens, known[pr]) << name << " K=" << K;
        EXPECT_EQ(r.reason, FinishReason::kStop);
      }
      if (std::string(name) == "none wrong") { EXPECT_GT(spec.stats().spec.num_accepted_tokens, 0); }
    }
  }
  // Drafts that break the grammar (the unconstrained greedy tokens) are never emitted.
  std::map<std::vector<int>, std::vector<int>> free;
  for (const auto& pr : prompts) free[pr] = fake_greedy(pr, 40);
  FakeStats st;
  ReplayDrafts oracle(free, [](int64_t) { return false; });
  Engine spec(std::make_unique<FakeRunner>(&st), nullptr, nullptr, spec_options(3, &oracle));
  for (const auto& pr : prompts) {
    GenParams p = greedy(40);
    p.grammar = g;
    EXPECT_EQ(spec.generate(pr, p).tokens, known[pr]);
  }
  // Sampled with a grammar: every output fits it.
  for (int seed = 0; seed < 20; ++seed) {
    GenParams p;
    p.max_tokens = 40;
    p.seed = seed;
    p.grammar = g;
    const GenResult r = spec.generate(prompts[seed % 4], p);
    std::string text;
    for (int id : r.tokens) text += id ? std::string(1, kChars[size_t(id)]) : "";
    EXPECT_TRUE(g->matches(text)) << text;
  }
}

// A draft source that fails now and then costs drafts, never output.
class FlakyDrafts : public ReplayDrafts {
 public:
  FlakyDrafts(std::map<std::vector<int>, std::vector<int>> known, int fail_every)
      : ReplayDrafts(std::move(known), [](int64_t) { return false; }), every_(fail_every) {}
  void propose(std::vector<DraftRequest>& reqs) override {
    if (++calls % every_ == 0) throw Error("flaky draft source");
    ReplayDrafts::propose(reqs);
  }
  int calls = 0;

 private:
  int every_;
};

TEST(SpecFake, FailingDraftSourceKeepsTheOutput) {
  const std::vector<int> prompt = prompt_of(5, 12);
  GenParams p = greedy(30);
  p.ignore_eos = true;
  std::vector<int> want;
  {
    FakeStats st0;
    Engine plain(std::make_unique<FakeRunner>(&st0), nullptr, nullptr, EngineOptions{});
    want = plain.generate(prompt, p).tokens;
  }
  // Every 3rd call fails: the rows it missed come with the next call (ReplayDrafts checks
  // them). Every call fails: after three the request stops speculating.
  for (int every : {3, 1}) {
    FakeStats st;
    FlakyDrafts oracle({{prompt, want}}, every);
    Engine e(std::make_unique<FakeRunner>(&st), nullptr, nullptr, spec_options(3, &oracle));
    EXPECT_EQ(e.generate(prompt, p).tokens, want) << "failing every " << every;
    if (every == 1) {
      EXPECT_EQ(oracle.calls, 3);
      EXPECT_EQ(e.stats().spec.num_drafts, 0);
    } else {
      EXPECT_GT(oracle.calls, 3);
      EXPECT_GT(e.stats().spec.num_accepted_tokens, 0);
    }
  }
}

// The processed target distribution of one fake logits row (temperature, then top_k), as
// sampling::Sampler defines it.
std::vector<double> target_dist(uint64_t hash, int last, double temperature, int top_k) {
  std::vector<float> l(kFakeVocab);
  testing::fake_fill(hash, last, l.data());
  std::vector<int> order(kFakeVocab);
  for (int i = 0; i < kFakeVocab; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
  std::vector<double> p(kFakeVocab, 0.0);
  double z = 0;
  for (int r = 0; r < top_k; ++r) z += p[order[r]] = std::exp((double(l[order[r]]) - l[order[0]]) / temperature);
  for (double& x : p) x /= z;
  return p;
}

// Drafts the fake model's own greedy target (accepted with its probability, about 0.6
// at temperature 2), so sampled runs take both the accept and the reject-and-resample branch.
class GreedyTargetDrafts : public DraftSource {
 public:
  void propose(std::vector<DraftRequest>& reqs) override {
    for (auto& q : reqs) {
      q.drafts.clear();
      uint64_t h = 1469598103934665603ull;
      int last = -1;
      for (int t : *q.context) h = testing::fake_mix(h, t), last = t;
      for (int i = 0; i < q.k; ++i) {
        const int d = testing::fake_target(h, last);
        q.drafts.push_back(d);
        h = testing::fake_mix(h, d);
        last = d;
      }
    }
  }
};

TEST(SpecFake, SampledOutputKeepsTheTargetDistribution) {
  const std::vector<int> prompt = prompt_of(2, 4);
  constexpr int kTopK = 4, kN = 4000;
  constexpr double kTemp = 2.0;
  // Exact joint distribution of the first three output tokens.
  uint64_t h0 = 1469598103934665603ull;
  int last0 = -1;
  for (int t : prompt) h0 = testing::fake_mix(h0, t), last0 = t;
  std::map<std::vector<int>, double> exact;
  const std::vector<double> p1 = target_dist(h0, last0, kTemp, kTopK);
  for (int a = 0; a < kFakeVocab; ++a) {
    if (p1[a] == 0) continue;
    const uint64_t h1 = testing::fake_mix(h0, a);
    const std::vector<double> p2 = target_dist(h1, a, kTemp, kTopK);
    for (int b = 0; b < kFakeVocab; ++b) {
      if (p2[b] == 0) continue;
      const std::vector<double> p3 = target_dist(testing::fake_mix(h1, b), b, kTemp, kTopK);
      for (int c = 0; c < kFakeVocab; ++c)
        if (p3[c] > 0) exact[{a, b, c}] = p1[a] * p2[b] * p3[c];
    }
  }
  FakeStats st;
  GreedyTargetDrafts drafts;
  Engine e(std::make_unique<FakeRunner>(&st), nullptr, nullptr, spec_options(2, &drafts));
  std::map<std::vector<int>, int> count;
  for (int i = 0; i < kN; ++i) {
    GenParams p;
    p.temperature = kTemp;
    p.top_k = kTopK;
    p.max_tokens = 4;
    p.ignore_eos = true;
    p.seed = 7000 + i;
    const GenResult r = e.generate(prompt, p);
    ASSERT_EQ(r.tokens.size(), 4u);
    ++count[{r.tokens[0], r.tokens[1], r.tokens[2]}];
  }
  const SpecDecodeStats sp = e.stats().spec;
  EXPECT_GT(sp.num_accepted_tokens, sp.num_draft_tokens / 5) << "the accept branch ran";
  EXPECT_LT(sp.num_accepted_tokens, sp.num_draft_tokens * 4 / 5) << "the reject branch ran";
  double chi2 = 0;
  for (const auto& [seq, c] : count) EXPECT_TRUE(exact.count(seq)) << "impossible output";
  for (const auto& [seq, pr] : exact) {
    const double want = pr * kN, got = count.count(seq) ? count[seq] : 0;
    chi2 += (got - want) * (got - want) / want;
    EXPECT_NEAR(got, want, 5 * std::sqrt(want * (1 - pr)) + 1) << seq[0] << "," << seq[1] << "," << seq[2];
  }
  // 63 degrees of freedom (64 outcomes): the 0.9999 quantile is about 115.
  EXPECT_LT(chi2, 115.0) << exact.size() << " outcomes";
}

}  // namespace
}  // namespace qinfer::engine
