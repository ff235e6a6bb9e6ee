#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fake_runner.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qinfer::engine {
namespace {

using testing::FakeRunner;
using testing::FakeStats;
using testing::fake_greedy;

std::unique_ptr<Engine> make_engine(FakeStats* stats, int max_num_seqs = 32, int prefill_chunk = 512,
                                    int64_t max_ctx = 4096) {
  EngineOptions o;
  o.max_num_seqs = max_num_seqs;
  o.prefill_chunk = prefill_chunk;
  return std::make_unique<Engine>(std::make_unique<FakeRunner>(stats, max_ctx), nullptr, nullptr, o);
}

GenParams greedy(int max_tokens) {
  GenParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  return p;
}

std::vector<int> prompt_of(int i, int len) {
  std::vector<int> p;
  for (int k = 0; k < len; ++k) {
    int v = 1 + (i * 31 + k * 7) % 60;
    p.push_back(v == testing::kFakeToEos || v == testing::kFakePoison ? v + 1 : v);
  }
  return p;
}

// A fake whose sequences hold KV: 1000 bytes a token and 5000 of state, as a runner's memory
// plan would count them.
class KvFakeRunner : public FakeRunner {
 public:
  using FakeRunner::FakeRunner;
  int64_t sequence_bytes(int64_t tokens) const override { return tokens * 1000 + 5000; }
};

// Issue 12 item 4: queued work is counted in bytes. The budget is max_queued_bytes plus the
// running sequences' planned share (KV and state of max_model_len tokens from the runner,
// vocab-sized buffers); a submit that would pass it is EngineBusy, a sequence that alone
// holds more than max_queued_bytes an Error (a 400: retrying cannot help); when everything
// has finished nothing is counted.
TEST(Engine, WorkMemoryBudgetBoundsWhatWaits) {
  FakeStats st;
  EngineOptions o;
  o.max_num_seqs = 1;
  o.max_queued_bytes = int64_t{1} << 20;
  const int64_t ctx = int64_t{1} << 16;
  Engine e(std::make_unique<KvFakeRunner>(&st, ctx), nullptr, nullptr, o);
  const WorkBytes full = e.work_bytes(1, greedy(-1));
  EXPECT_GE(full.running - full.held, ctx * 1000 + 5000);   // the KV of a whole context
  EXPECT_EQ(e.work_budget(), o.max_queued_bytes + (full.running - full.held));
  EXPECT_LT(e.work_bytes(100, greedy(10)).running, e.work_bytes(100, greedy(1000)).running);
  EXPECT_EQ(e.work_bytes(100, greedy(10)).held, e.work_bytes(100, greedy(1000)).held);

  const int L = 20000;
  const GenParams p = greedy(-1);   // up to the context: each running sequence takes its whole share
  const WorkBytes w = e.work_bytes(L, p);
  EXPECT_GE(w.held, 4 * L);
  const int64_t fit = o.max_queued_bytes / w.held;   // sequences whose held bytes the allowance takes
  ASSERT_GE(fit, 3);
  st.close_gate();
  std::vector<std::shared_ptr<RequestStream>> streams;
  streams.push_back(e.submit(prompt_of(0, L), p));
  for (int i = 0; i < 1000 && e.stats().active < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(e.stats().active, 1);   // running, held at the gate
  for (int64_t i = 1; i < fit; ++i) streams.push_back(e.submit(prompt_of(static_cast<int>(i), L), p));
  EXPECT_EQ(e.stats().queued, fit - 1);
  EXPECT_THROW(e.submit(prompt_of(99, L), p), EngineBusy);   // 2048 sequences / 2^24 tokens would allow it
  EXPECT_LE(e.stats().work_bytes, e.work_budget());
  EXPECT_EQ(e.stats().work_bytes, fit * w.held + (full.running - full.held));
  // A cancelled waiting sequence gives its bytes back.
  streams.back()->cancel();
  streams.pop_back();
  st.open_gate();
  for (auto& s : streams) {
    GenEvent ev;
    for (int i = 0; i < 6000 && !ev.finished; ++i) s->take(ev, 0.01);
    EXPECT_TRUE(ev.finished);
  }
  for (int i = 0; i < 500 && e.stats().work_bytes != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(e.stats().work_bytes, 0);

  // A sequence that alone holds more than max_queued_bytes: an Error, not EngineBusy.
  EngineOptions small = o;
  small.max_queued_bytes = 4 * L;
  Engine e2(std::make_unique<KvFakeRunner>(&st, ctx), nullptr, nullptr, small);
  try {
    e2.submit(prompt_of(1, L), p);
    ADD_FAILURE() << "accepted";
  } catch (const EngineBusy& b) {
    ADD_FAILURE() << "busy: " << b.what();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("prompt:"), std::string::npos) << err.what();
  }
  EXPECT_EQ(e2.stats().work_bytes, 0);
}

TEST(Engine, GreedyMatchesModel) {
  FakeStats st;
  auto e = make_engine(&st);
  auto prompt = prompt_of(3, 20);
  auto r = e->generate(prompt, greedy(12));
  auto want = fake_greedy(prompt, 12);
  EXPECT_EQ(r.tokens, want);
  EXPECT_EQ(r.prompt_tokens, 20);
  EXPECT_EQ(r.completion_tokens, static_cast<int64_t>(want.size()));
  EXPECT_EQ(r.reason, want.back() == testing::kFakeEos ? FinishReason::kStop : FinishReason::kLength);
  EXPECT_GE(r.time_to_first_token, 0);
}

TEST(Engine, EosStopsAndIsReported) {
  FakeStats st;
  auto e = make_engine(&st);
  auto r = e->generate({5, 9, testing::kFakeToEos}, greedy(50));
  ASSERT_EQ(r.tokens.size(), 1u);
  EXPECT_EQ(r.tokens[0], testing::kFakeEos);
  EXPECT_EQ(r.reason, FinishReason::kStop);
  EXPECT_EQ(r.stop_token, testing::kFakeEos);
  // ignore_eos keeps going to max_tokens.
  GenParams p = greedy(5);
  p.ignore_eos = true;
  auto r2 = e->generate({5, 9, testing::kFakeToEos}, p);
  EXPECT_EQ(r2.tokens.size(), 5u);
  EXPECT_EQ(r2.reason, FinishReason::kLength);
  // A stop_token_ids entry ends it too.
  auto want = fake_greedy({4, 4, 4}, 10);
  GenParams p3 = greedy(10);
  p3.stop_token_ids = {want[2]};
  auto r3 = e->generate({4, 4, 4}, p3);
  EXPECT_EQ(r3.reason, FinishReason::kStop);
  EXPECT_EQ(r3.stop_token, want[2]);
  EXPECT_LE(r3.tokens.size(), 3u);
}

TEST(Engine, ConcurrentGreedyEqualsSequential) {
  constexpr int kN = 32;
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < kN; ++i) prompts.push_back(prompt_of(i, 5 + (i * 13) % 40));
  std::vector<std::vector<int>> seq_out(kN), conc_out(kN);
  {
    FakeStats st;
    auto e = make_engine(&st);
    for (int i = 0; i < kN; ++i) seq_out[i] = e->generate(prompts[i], greedy(16 + i % 5)).tokens;
  }
  FakeStats st;
  auto e = make_engine(&st, kN, 64);
  st.close_gate();  // the first forward waits until every request is queued
  std::vector<std::thread> threads;
  for (int i = 0; i < kN; ++i) {
    threads.emplace_back([&, i] { conc_out[i] = e->generate(prompts[i], greedy(16 + i % 5)).tokens; });
  }
  while (e->stats().queued + e->stats().active < kN) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  st.open_gate();
  for (auto& t : threads) t.join();
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(conc_out[i], seq_out[i]) << "request " << i;
    EXPECT_EQ(seq_out[i], fake_greedy(prompts[i], 16 + i % 5));
  }
  size_t widest = 0;
  for (const auto& c : st.calls) widest = std::max(widest, c.size());
  EXPECT_GT(widest, 8u) << "requests were not batched into shared forward calls";
  EXPECT_EQ(st.live.load(), 0);
}

TEST(Engine, MaxNumSeqsBoundsAdmission) {
  FakeStats st;
  auto e = make_engine(&st, 3);
  std::vector<std::shared_ptr<RequestStream>> streams;
  // All ten are queued before the first forward returns; otherwise a fast
  // engine could finish each request before the next one arrives (seen once in
  // CI: max_live 1).
  st.close_gate();
  for (int i = 0; i < 10; ++i) streams.push_back(e->submit(prompt_of(i, 8), greedy(6)));
  st.open_gate();
  for (auto& s : streams) {
    GenEvent ev;
    while (!s->finished()) s->take(ev, 0.1);
  }
  EXPECT_LE(st.max_live.load(), 3);
  EXPECT_GE(st.max_live.load(), 2);
  for (const auto& c : st.calls) EXPECT_LE(c.size(), 3u);
  auto stats = e->stats();
  EXPECT_EQ(stats.requests_finished, 10);
  EXPECT_EQ(stats.queued, 0);
}

TEST(Engine, ChunkedPrefillKeepsDecodingOthers) {
  FakeStats st;
  auto e = make_engine(&st, 4, 100);
  auto small = prompt_of(1, 4);
  auto big = prompt_of(2, 1000);
  st.close_gate();  // the small prompt's prefill waits until the long one is queued too
  auto s1 = e->submit(small, greedy(30));
  auto s2 = e->submit(big, greedy(3));
  st.open_gate();
  GenEvent ev;
  std::vector<int> t1, t2;
  bool f1 = false, f2 = false;
  while (!f1 || !f2) {
    if (!f1 && s1->take(ev, 0.05)) {
      for (const auto& t : ev.tokens) t1.push_back(t.token);
      f1 = ev.finished;
    }
    if (!f2 && s2->take(ev, 0.05)) {
      for (const auto& t : ev.tokens) t2.push_back(t.token);
      f2 = ev.finished;
    }
  }
  EXPECT_EQ(t1, fake_greedy(small, 30));
  EXPECT_EQ(t2, fake_greedy(big, 3));
  int mixed = 0;
  for (const auto& c : st.calls) {
    int64_t total = 0;
    for (auto n : c) total += n;
    EXPECT_LE(total, 100 + 4);  // prefill budget + one decode token per other sequence
    if (c.size() == 2 && (c[0] == 1) && c[1] > 1) ++mixed;
  }
  EXPECT_GE(mixed, 5) << "decode steps did not share calls with the prefill chunks";
}

TEST(Engine, CancelFreesSequenceAtOnce) {
  FakeStats st;
  auto e = make_engine(&st);
  GenParams p = greedy(-1);
  p.ignore_eos = true;
  auto s = e->submit(prompt_of(5, 10), p);
  GenEvent ev;
  while (!s->take(ev, 1.0)) {}
  EXPECT_EQ(st.live.load(), 1);
  s->cancel();
  bool finished = false;
  for (int i = 0; i < 100 && !finished; ++i) {
    if (s->take(ev, 0.1) && ev.finished) finished = true;
  }
  ASSERT_TRUE(finished);
  EXPECT_EQ(ev.reason, FinishReason::kAbort);
  EXPECT_EQ(st.live.load(), 0);
  EXPECT_EQ(e->stats().requests_aborted, 1);
}

TEST(Engine, CancelWhileQueued) {
  FakeStats st;
  auto e = make_engine(&st, 1);
  GenParams p = greedy(-1);
  p.ignore_eos = true;
  auto busy = e->submit(prompt_of(1, 4), p);
  auto queued = e->submit(prompt_of(2, 4), greedy(4));
  queued->cancel();
  GenEvent ev;
  bool finished = false;
  for (int i = 0; i < 100 && !finished; ++i) finished = queued->take(ev, 0.05) && ev.finished;
  ASSERT_TRUE(finished);
  EXPECT_EQ(ev.reason, FinishReason::kAbort);
  EXPECT_TRUE(ev.tokens.empty());
  busy->cancel();
}

// As vLLM: --max-model-len above the model's context is refused, naming the flag and
// the override; with the override it is lowered to the model's context.
TEST(Engine, MaxModelLenAboveTheModelIsRefusedUnlessAllowed) {
  FakeStats st;
  EngineOptions o;
  o.max_model_len = 100;
  try {
    Engine e(std::make_unique<FakeRunner>(&st, 64), nullptr, nullptr, o);
    FAIL() << "no error";
  } catch (const Error& err) {
    std::string m = err.what();
    EXPECT_NE(m.find("--max-model-len 100"), std::string::npos) << m;
    EXPECT_NE(m.find("maximum context of 64"), std::string::npos) << m;
    EXPECT_NE(m.find("QINFER_ALLOW_LONG_MAX_MODEL_LEN=1"), std::string::npos) << m;
  }
  o.allow_long_max_model_len = true;
  Engine allowed(std::make_unique<FakeRunner>(&st, 64), nullptr, nullptr, o);
  EXPECT_EQ(allowed.max_model_len(), 64);
  o.max_model_len = 32;
  o.allow_long_max_model_len = false;
  Engine smaller(std::make_unique<FakeRunner>(&st, 64), nullptr, nullptr, o);
  EXPECT_EQ(smaller.max_model_len(), 32);
  EXPECT_EQ(Engine::resolve_max_model_len(0, 64, false, "x"), 64);
  EXPECT_THROW(Engine::resolve_max_model_len(-1, 64, true, "x"), Error);
}

TEST(Engine, ContextLimitsAndBadInput) {
  FakeStats st;
  auto e = make_engine(&st, 4, 512, 64);
  EXPECT_EQ(e->max_model_len(), 64);
  EXPECT_THROW(e->submit({}, greedy(4)), Error);
  EXPECT_THROW(e->submit({1, 2, 99}, greedy(4)), Error);
  EXPECT_THROW(e->submit({1, -1}, greedy(4)), Error);
  try {
    e->submit(std::vector<int>(60, 3), greedy(10));
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("maximum context length is 64"), std::string::npos) << err.what();
  }
  EXPECT_THROW(e->submit(std::vector<int>(64, 3), greedy(-1)), Error);
  GenParams bad = greedy(4);
  bad.top_p = 0;
  EXPECT_THROW(e->submit({1, 2}, bad), Error);
  // Without max_tokens generation runs to the end of the context.
  GenParams p = greedy(-1);
  p.ignore_eos = true;
  auto r = e->generate(std::vector<int>(60, 3), p);
  EXPECT_EQ(r.completion_tokens, 4);
  EXPECT_EQ(r.reason, FinishReason::kLength);
}

TEST(Engine, SeededSamplingReproducible) {
  FakeStats st;
  auto e = make_engine(&st);
  GenParams p;
  p.temperature = 1.5;
  p.max_tokens = 20;
  p.ignore_eos = true;
  p.seed = 1234;
  auto a = e->generate(prompt_of(9, 6), p);
  auto b = e->generate(prompt_of(9, 6), p);
  EXPECT_EQ(a.tokens, b.tokens);
  p.logprobs = 3;
  auto c = e->generate(prompt_of(9, 6), p);
  ASSERT_EQ(c.token_info.size(), 20u);
  for (const auto& t : c.token_info) {
    EXPECT_LE(t.logprob, 0.f);
    ASSERT_EQ(t.top.size(), 3u);
    EXPECT_GE(t.top[0].logprob, t.top[1].logprob);
  }
}

TEST(Engine, ForwardErrorFailsOnlyTheSequenceAtFault) {
  FakeStats st;
  auto e = make_engine(&st);
  st.close_gate();
  auto good_prompt = prompt_of(2, 9);
  auto good = e->submit(good_prompt, greedy(10));
  auto bad = e->submit({1, 2, testing::kFakePoison}, greedy(10));
  st.open_gate();
  GenEvent ev;
  bool finished = false;
  for (int i = 0; i < 200 && !finished; ++i) finished = bad->take(ev, 0.05) && ev.finished;
  ASSERT_TRUE(finished);
  EXPECT_EQ(ev.reason, FinishReason::kError);
  EXPECT_NE(ev.error.find("poisoned"), std::string::npos);
  std::vector<int> got;
  finished = false;
  for (int i = 0; i < 200 && !finished; ++i) {
    if (good->take(ev, 0.05)) {
      for (const auto& t : ev.tokens) got.push_back(t.token);
      finished = ev.finished;
    }
  }
  EXPECT_EQ(got, fake_greedy(good_prompt, 10));
  EXPECT_EQ(e->stats().requests_failed, 1);
}

TEST(Engine, StopStringsNeedTokenizer) {
  FakeStats st;
  auto e = make_engine(&st);
  GenParams p = greedy(4);
  p.stop = {"x"};
  EXPECT_THROW(e->submit({1, 2}, p), Error);
}

// With a real tokenizer: text deltas, stop strings cut the text.
TEST(Engine, TextAndStopStringsWithTokenizer) {
  FakeStats st;
  EngineOptions o;
  auto tok = std::make_unique<Tokenizer>(Tokenizer::load(QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5"));
  const Tokenizer* tp = tok.get();
  Engine e(std::make_unique<FakeRunner>(&st), std::move(tok), nullptr, o);
  auto prompt = prompt_of(4, 6);
  auto want = fake_greedy(prompt, 12);
  auto r = e.generate(prompt, greedy(12));
  std::vector<int> text_ids(want.begin(), want.end());
  if (!text_ids.empty() && text_ids.back() == testing::kFakeEos) text_ids.pop_back();
  EXPECT_EQ(r.text, tp->decode(text_ids, true));
  ASSERT_GE(r.text.size(), 4u);
  // Stop at a substring of the expected text.
  std::string stop = r.text.substr(r.text.size() / 2, 2);
  GenParams p = greedy(12);
  p.stop = {stop};
  auto r2 = e.generate(prompt, p);
  EXPECT_EQ(r2.reason, FinishReason::kStop);
  EXPECT_EQ(r2.stop_str, stop);
  EXPECT_EQ(r2.text, r.text.substr(0, r.text.find(stop)));
}

}  // namespace
}  // namespace qinfer::engine
