// Speculative decoding through the engine on the tiny golden fixtures: greedy output
// identical to the golden greedy continuation with the MTP head drafting (K = 1..4,
// alone and batched, mixed with non-speculating requests), an oracle draft source
// (the known greedy continuation, corrupted at chosen output positions) that drives
// full and every partial acceptance and so the rollback, with the acceptance
// counters checked against a step-by-step simulation, and stops / max_tokens /
// logprobs / seeded sampling behaving as without speculation.
#include <gtest/gtest.h>

#include <functional>

#include "../model/golden.h"
#include "engine/engine.h"
#include "util/error.h"

namespace qinfer::engine {
namespace {

using qinfer::test::fixture_dirs;
using qinfer::test::fixture_test_name;
using qinfer::test::Golden;
using qinfer::test::short_name;

struct Prompt {
  std::vector<int> ids, greedy;   // greedy: the 16 golden greedy tokens
};

std::vector<Prompt> prompts_of(const std::string& dir) {
  Golden g(dir);
  std::vector<Prompt> out;
  for (int p = 0; p < g.num_prompts(); ++p) {
    const std::string pre = "p" + std::to_string(p) + ".";
    out.push_back({g.i32(pre + "input_ids"), g.i32(pre + "greedy_tokens")});
  }
  return out;
}

// Drafts = the known greedy continuation; the draft for output index i is made wrong
// when corrupt(i).
class OracleDrafts : public DraftSource {
 public:
  OracleDrafts(std::vector<Prompt> known, std::function<bool(int64_t)> corrupt)
      : known_(std::move(known)), corrupt_(std::move(corrupt)) {}
  void propose(std::vector<DraftRequest>& reqs) override {
    for (auto& q : reqs) {
      q.drafts.clear();
      ++calls;
      if (q.k == 0) continue;
      const Prompt* kn = nullptr;
      for (const auto& p : known_)
        if (q.context->size() >= p.ids.size() && std::equal(p.ids.begin(), p.ids.end(), q.context->begin())) kn = &p;
      if (!kn) throw Error("oracle: unknown prompt");
      // The context ends with the next input (output index done-1); draft i predicts output done+i.
      const int64_t done = static_cast<int64_t>(q.context->size() - kn->ids.size());
      EXPECT_EQ(q.next_tokens[q.n - 1], q.context->back());
      for (int i = 0; i < q.k; ++i) {
        const int64_t idx = done + i;
        int tok = idx < static_cast<int64_t>(kn->greedy.size()) ? kn->greedy[idx] : 0;
        if (corrupt_(idx)) tok = (tok + 1) % 500;
        q.drafts.push_back(tok);
      }
    }
  }
  int64_t calls = 0;

 private:
  std::vector<Prompt> known_;
  std::function<bool(int64_t)> corrupt_;
};

std::unique_ptr<Engine> make(const std::string& dir, int K, DraftSource* oracle = nullptr, int max_seqs = 4,
                             int disable_by_batch = 0) {
  EngineOptions o;
  o.max_num_seqs = max_seqs;
  o.load.threads = 2;
  if (K > 0) {
    o.spec.method = "mtp";
    o.spec.num_speculative_tokens = K;
    o.spec.draft_override = oracle;
    o.spec.disable_by_batch_size = disable_by_batch;
  }
  return Engine::load(dir, o);
}

GenParams greedy(int64_t n) {
  GenParams p;
  p.temperature = 0;
  p.max_tokens = n;
  p.ignore_eos = true;
  return p;
}

std::vector<int> drain(RequestStream& s) {
  std::vector<int> got;
  GenEvent ev;
  while (true) {
    if (!s.take(ev, 5.0)) continue;
    for (const auto& t : ev.tokens) got.push_back(t.token);
    if (ev.finished) return got;
  }
}

class SpecFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(SpecFixture, GreedyIdenticalWithMtpDraftsAloneAndBatched) {
  const std::string dir = GetParam();
  const auto prompts = prompts_of(dir);
  for (int K = 1; K <= 4; ++K) {
    auto e = make(dir, K);
    for (const auto& p : prompts) {
      GenResult r = e->generate(p.ids, greedy(16));
      EXPECT_EQ(r.tokens, p.greedy) << short_name(dir) << " K=" << K << " alone";
      EXPECT_EQ(r.reason, FinishReason::kLength);
    }
    // Batched, one request not speculating.
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenParams gp = greedy(16);
      gp.speculate = i != 1;
      streams.push_back(e->submit(prompts[i].ids, gp));
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::vector<int> got = drain(*streams[i]);
      EXPECT_EQ(got, prompts[i].greedy) << short_name(dir) << " K=" << K << " batched request " << i;
    }
    const SpecDecodeStats st = e->stats().spec;
    EXPECT_GT(st.num_drafts, 0);
    EXPECT_EQ(st.accepted_per_pos.size(), static_cast<size_t>(K));
    int64_t sum = 0;
    for (size_t i = 0; i < st.accepted_per_pos.size(); ++i) {
      sum += st.accepted_per_pos[i];
      if (i > 0) { EXPECT_LE(st.accepted_per_pos[i], st.accepted_per_pos[i - 1]); }
    }
    EXPECT_EQ(sum, st.num_accepted_tokens);
  }
}

// The cheaper draft heads (qinfer's draft_vocab_size and draft_lm_head int8) change the
// drafts only, never the output.
TEST_P(SpecFixture, GreedyIdenticalWithCheaperDraftHeads) {
  const std::string dir = GetParam();
  EngineOptions o;
  o.load.threads = 2;
  o.spec.method = "mtp";
  o.spec.num_speculative_tokens = 2;
  o.spec.draft_int8 = true;
  o.spec.draft_layer_int8 = true;
  o.spec.draft_vocab_size = 300;
  auto e = Engine::load(dir, o);
  for (const auto& p : prompts_of(dir)) EXPECT_EQ(e->generate(p.ids, greedy(16)).tokens, p.greedy) << short_name(dir);
  EXPECT_GT(e->stats().spec.num_drafts, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SpecFixture, ::testing::ValuesIn(fixture_dirs()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return fixture_test_name(i.param); });

// What the engine must count with the oracle: one draft run after the prefill, then
// every step verifies min(K, tokens left - 1) drafts and emits the accepted prefix + 1.
SpecDecodeStats simulate(int K, int64_t max_tokens, const std::function<bool(int64_t)>& corrupt) {
  SpecDecodeStats s;
  s.accepted_per_pos.assign(K, 0);
  int64_t out = 1;
  while (out < max_tokens) {
    const int64_t room = std::min<int64_t>(K, max_tokens - out - 1);
    int64_t acc = 0;
    while (acc < room && !corrupt(out + acc)) ++acc;
    if (room > 0) {
      ++s.num_drafts;
      s.num_draft_tokens += room;
      s.num_accepted_tokens += acc;
      for (int64_t i = 0; i < acc; ++i) ++s.accepted_per_pos[i];
    }
    out += acc + 1;
  }
  return s;
}

TEST(SpecOracle, FullAndPartialAcceptanceRollBackExactly) {
  const std::vector<std::pair<const char*, std::function<bool(int64_t)>>> patterns = {
      {"none wrong", [](int64_t) { return false; }},
      {"all wrong", [](int64_t) { return true; }},
      {"every 3rd", [](int64_t i) { return i % 3 == 1; }},
      {"every 2nd", [](int64_t i) { return i % 2 == 0; }},
      {"5th and 11th", [](int64_t i) { return i == 5 || i == 11; }},
      {"every 4th", [](int64_t i) { return i % 4 == 3; }}};
  for (const std::string fx : {"qwen35moe-tiny-s1/bf16", "qwen35moe-tiny-s2/gptq", "qwen35moe-tiny-s2/bf16"}) {
    const std::string dir = qinfer::test::fixtures_dir() + "/" + fx;
    const auto prompts = prompts_of(dir);
    for (const auto& [name, corrupt] : patterns) {
      for (int K = 1; K <= 4; ++K) {
        OracleDrafts oracle(prompts, corrupt);
        auto e = make(dir, K, &oracle);
        for (const auto& p : prompts) {   // one at a time: the counters are per request
          const SpecDecodeStats before = e->stats().spec;
          GenResult r = e->generate(p.ids, greedy(16));
          EXPECT_EQ(r.tokens, p.greedy) << fx << " " << name << " K=" << K;
          const SpecDecodeStats after = e->stats().spec, want = simulate(K, 16, corrupt);
          EXPECT_EQ(after.num_drafts - before.num_drafts, want.num_drafts) << fx << " " << name << " K=" << K;
          EXPECT_EQ(after.num_draft_tokens - before.num_draft_tokens, want.num_draft_tokens) << name << " K=" << K;
          EXPECT_EQ(after.num_accepted_tokens - before.num_accepted_tokens, want.num_accepted_tokens)
              << fx << " " << name << " K=" << K;
          for (int i = 0; i < K; ++i)
            EXPECT_EQ(after.accepted_per_pos[i] - before.accepted_per_pos[i], want.accepted_per_pos[i]) << name;
        }
        if (std::string(name) == "none wrong") {
          EXPECT_DOUBLE_EQ(e->stats().spec.acceptance_rate(), 1.0);
          EXPECT_GT(e->stats().spec.mean_accepted_length(), 1.0 + 0.5 * K);
        }
      }
    }
  }
}

TEST(SpecOracle, BatchedWithOracleMatches) {
  const std::string dir = qinfer::test::fixtures_dir() + "/qwen35moe-tiny-s2/gptq";
  const auto prompts = prompts_of(dir);
  OracleDrafts oracle(prompts, [](int64_t i) { return i % 3 == 2; });
  auto e = make(dir, 3, &oracle);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : prompts) streams.push_back(e->submit(p.ids, greedy(16)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<int> got = drain(*streams[i]);
    EXPECT_EQ(got, prompts[i].greedy) << "request " << i;
  }
}

TEST(SpecOracle, StopsMaxTokensAndLogprobsAsWithoutSpeculation) {
  const std::string dir = qinfer::test::fixtures_dir() + "/qwen35moe-tiny-s1/gptq";
  const auto prompts = prompts_of(dir);
  OracleDrafts oracle(prompts, [](int64_t) { return false; });
  auto spec = make(dir, 4, &oracle);
  auto plain = make(dir, 0);
  const Prompt& p = prompts[2];
  // A stop id inside an accepted run ends the output there (with the stop id).
  GenParams sp = greedy(16);
  sp.stop_token_ids = {p.greedy[6]};
  GenResult a = spec->generate(p.ids, sp), b = plain->generate(p.ids, sp);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.reason, FinishReason::kStop);
  EXPECT_LE(a.tokens.size(), 7u);
  EXPECT_EQ(a.tokens.back(), p.greedy[6]);
  // max_tokens that is not a multiple of K + 1.
  for (int n : {1, 2, 7, 11}) {
    GenResult r = spec->generate(p.ids, greedy(n));
    EXPECT_EQ(r.tokens, std::vector<int>(p.greedy.begin(), p.greedy.begin() + n)) << n;
    EXPECT_EQ(r.reason, FinishReason::kLength);
  }
  // Logprobs of every emitted token as without speculation.
  GenParams lp = greedy(16);
  lp.logprobs = 3;
  GenResult x = spec->generate(p.ids, lp), y = plain->generate(p.ids, lp);
  ASSERT_EQ(x.token_info.size(), y.token_info.size());
  for (size_t i = 0; i < x.token_info.size(); ++i) {
    EXPECT_EQ(x.token_info[i].token, y.token_info[i].token);
    EXPECT_NEAR(x.token_info[i].logprob, y.token_info[i].logprob, 1e-4) << i;
    ASSERT_EQ(x.token_info[i].top.size(), 3u);
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(x.token_info[i].top[j].token, y.token_info[i].top[j].token);
      EXPECT_NEAR(x.token_info[i].top[j].logprob, y.token_info[i].top[j].logprob, 1e-4);
    }
  }
  // Penalties apply to accepted drafts as to sampled tokens.
  GenParams pen = greedy(16);
  pen.repetition_penalty = 1.3;
  pen.frequency_penalty = 0.5;
  EXPECT_EQ(spec->generate(p.ids, pen).tokens, plain->generate(p.ids, pen).tokens);
}

TEST(SpecOracle, SeededSamplingIsReproducible) {
  const std::string dir = qinfer::test::fixtures_dir() + "/qwen35moe-tiny-s2/bf16";
  const auto prompts = prompts_of(dir);
  GenParams sp;
  sp.temperature = 0.9;
  sp.top_k = 20;
  sp.max_tokens = 16;
  sp.ignore_eos = true;
  sp.seed = 1234;
  auto e1 = make(dir, 3), e2 = make(dir, 3);
  for (const auto& p : prompts) {
    GenResult a = e1->generate(p.ids, sp), b = e2->generate(p.ids, sp), c = e1->generate(p.ids, sp);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.tokens, c.tokens);
    EXPECT_EQ(a.tokens.size(), 16u);
  }
}

TEST(SpecOracle, DisableByBatchSize) {
  const std::string dir = qinfer::test::fixtures_dir() + "/qwen35moe-tiny-s1/bf16";
  const auto prompts = prompts_of(dir);
  OracleDrafts oracle(prompts, [](int64_t) { return false; });
  auto e = make(dir, 2, &oracle, 4, /*disable_by_batch=*/2);
  // Alone: speculates.
  EXPECT_EQ(e->generate(prompts[0].ids, greedy(16)).tokens, prompts[0].greedy);
  const int64_t alone = e->stats().spec.num_drafts;
  EXPECT_GT(alone, 0);
  // Three at once, all decoding together: no drafts while at least two decode.
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : prompts) streams.push_back(e->submit(p.ids, greedy(16)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<int> got = drain(*streams[i]);
    EXPECT_EQ(got, prompts[i].greedy);
  }
  EXPECT_LT(e->stats().spec.num_drafts - alone, alone);
}

TEST(SpecConfig, ParsesVllmJsonAndNamesBadFields) {
  SpeculativeOptions o = parse_speculative_config(R"({"method": "mtp", "num_speculative_tokens": 3})");
  EXPECT_EQ(o.num_speculative_tokens, 3);
  EXPECT_EQ(o.method, "mtp");
  EXPECT_EQ(parse_speculative_config(R"({"method":"qwen3_next_mtp","num_speculative_tokens":1})").num_speculative_tokens, 1);
  EXPECT_EQ(parse_speculative_config(R"({"method":"qwen3_5_mtp","num_speculative_tokens":4,"disable_by_batch_size":8})")
                .disable_by_batch_size, 8);
  EXPECT_TRUE(parse_speculative_config(R"({"method":"mtp","num_speculative_tokens":2,"draft_lm_head":"int8"})").draft_int8);
  EXPECT_FALSE(parse_speculative_config(R"({"method":"mtp","num_speculative_tokens":2,"draft_lm_head":"bf16"})").draft_int8);
  EXPECT_TRUE(parse_speculative_config(R"({"method":"mtp","num_speculative_tokens":2,"draft_layer":"int8"})").draft_layer_int8);
  EXPECT_FALSE(parse_speculative_config(R"({"method":"mtp","num_speculative_tokens":2,"draft_layer":"bf16"})").draft_layer_int8);
  EXPECT_FALSE(parse_speculative_config(R"({"method":"mtp","num_speculative_tokens":2,"draft_lm_head":"int8"})").draft_layer_int8);
  auto bad = [](const std::string& j, const std::string& needle) {
    try {
      parse_speculative_config(j);
      ADD_FAILURE() << j << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad("{", "not valid JSON");
  bad("[1]", "JSON object");
  bad(R"({"method": "eagle", "num_speculative_tokens": 2})", "eagle");
  bad(R"({"method": "mtp", "num_speculative_tokens": 5})", "1..4");
  bad(R"({"method": "mtp", "num_speculative_tokens": 0})", "1..4");
  bad(R"({"method": "mtp"})", "num_speculative_tokens");
  bad(R"({"num_speculative_tokens": 2})", "method");
  bad(R"({"method": "mtp", "num_speculative_tokens": "2"})", "integer");
  bad(R"({"method": "mtp", "num_speculative_tokens": 2, "disable_by_batch_size": 0})", "disable_by_batch_size");
  bad(R"({"method": "mtp", "num_speculative_tokens": 2, "draft_lm_head": "int4"})", "draft_lm_head");
  bad(R"({"method": "mtp", "num_speculative_tokens": 2, "draft_layer": 8})", "draft_layer");
}

}  // namespace
}  // namespace qinfer::engine

namespace qinfer::engine {
namespace {

// The MTP draft source's K drafts are the chain the issue defines, computed here straight
// from Model::forward_mtp: d1 = argmax of the MTP over the prompt rows (hidden i, token
// i+1, the main argmax last); d(j+1) = argmax of one more MTP row fed d(j) and the MTP's own
// post-norm hidden of the previous row, at the next position. With draft_vocab_size N, the
// same chain with every argmax over ids < N; with draft_lm_head int8, over the int8 copy.
TEST(MtpDraftSource, DraftsAreTheMtpChain) {
  for (const std::string fx : {"qwen35moe-tiny-s1/bf16", "qwen35moe-tiny-s2/gptq"}) {
    const std::string dir = qinfer::test::fixtures_dir() + "/" + fx;
    LoadOptions mo;
    mo.threads = 2;
    mo.load_mtp = true;
    auto model = Model::load(dir, mo);
    const int64_t V = model->config().text.vocab_size, H = model->config().text.hidden_size;
    for (const auto& [limit, int8] : std::vector<std::pair<int64_t, bool>>{{0, false}, {100, false}, {0, true}, {100, true}}) {
      RunnerLoadOptions ro;
      ro.threads = 2;
      ro.load_mtp = true;
      ro.draft_vocab = limit;
      ro.draft_int8 = int8;
      auto runner = load_model_runner(dir, ro);
      ASSERT_NE(runner->draft_source(), nullptr);
      const int64_t lim = limit > 0 ? limit : V;
      for (const auto& p : prompts_of(dir)) {
        const int64_t T = static_cast<int64_t>(p.ids.size());
        const int K = 4;
        // By hand.
        auto s = model->new_sequence();
        std::vector<float> logits(T * V), hidden(T * H), mlog(V), mh(T * H);
        model->forward({{s.get(), p.ids.data(), T, logits.data(), true, hidden.data()}});
        std::vector<int> next(p.ids.begin() + 1, p.ids.end());
        next.push_back(qinfer::test::argmax(logits.data() + (T - 1) * V, V));
        model->forward_mtp({{s.get(), next.data(), hidden.data(), T, mlog.data(), false, mh.data(), 0, int8}});
        std::vector<int> want = {qinfer::test::argmax(mlog.data(), lim)};
        std::vector<float> h(mh.end() - H, mh.end());
        for (int j = 1; j < K; ++j) {
          model->forward_mtp({{s.get(), &want.back(), h.data(), 1, mlog.data(), false, mh.data(), 0, int8}});
          want.push_back(qinfer::test::argmax(mlog.data(), lim));
          h.assign(mh.begin(), mh.begin() + H);
        }
        // Through the runner's draft source.
        auto rs = runner->new_sequence();
        std::vector<float> rl(V), rh(T * H);
        RunnerStep st{rs.get(), p.ids.data(), T, rl.data()};
        st.hidden = rh.data();
        runner->forward({st});
        std::vector<int> ctx = p.ids;
        ctx.push_back(next.back());
        std::vector<DraftRequest> reqs(1);
        reqs[0].seq = rs.get();
        reqs[0].pos0 = 0;
        reqs[0].next_tokens = next.data();
        reqs[0].hidden = rh.data();
        reqs[0].n = T;
        reqs[0].k = K;
        reqs[0].context = &ctx;
        runner->draft_source()->propose(reqs);
        EXPECT_EQ(reqs[0].drafts, want) << fx << " draft_vocab " << limit << " int8 " << int8;
        for (int d : reqs[0].drafts) EXPECT_LT(d, lim);
        // Asked again from a later position (as after an accepted row): the cache is rewound.
        reqs[0].pos0 = T - 1;
        reqs[0].next_tokens = next.data() + T - 1;
        reqs[0].hidden = rh.data() + (T - 1) * H;
        reqs[0].n = 1;
        runner->draft_source()->propose(reqs);
        EXPECT_EQ(reqs[0].drafts, want) << fx << " draft_vocab " << limit << " int8 " << int8 << " after rewind";
      }
    }
  }
}

}  // namespace
}  // namespace qinfer::engine
