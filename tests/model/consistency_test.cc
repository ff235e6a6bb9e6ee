// Self-consistency of the forward pass: prefill-then-decode equals one prefill,
// split prefills, batched steps of different sequences equal running them one at
// a time, state reset/clone, and bad input (the delta rule itself: tests/ops/delta_rule_test.cc).
#include <gtest/gtest.h>

#include "golden.h"
#include "util/error.h"

namespace qinfer::test {
namespace {

constexpr double kRelTol = 1e-4;   // same model, different summation order only

std::string s1_bf16() { return fixtures_dir() + "/qwen35moe-tiny-s1/bf16"; }
std::string s1_gptq() { return fixtures_dir() + "/qwen35moe-tiny-s1/gptq"; }


std::vector<int> prompt(const std::string& dir, int p) { return Golden(dir).i32("p" + std::to_string(p) + ".input_ids"); }

class Consistency : public ::testing::TestWithParam<std::string> {};

TEST_P(Consistency, PrefillThenDecodeEqualsFullPrefill) {
  Model& m = cached_model(GetParam());
  const int64_t V = m.config().text.vocab_size;
  const std::vector<int> ids = prompt(GetParam(), 2);   // 70 tokens: crosses a delta-rule chunk
  auto full_state = m.new_sequence();
  const std::vector<float> full = run(m, *full_state, ids);
  for (int64_t split : {1, 5, 40, 64, 69}) {
    auto s = m.new_sequence();
    std::vector<int> head(ids.begin(), ids.begin() + split);
    std::vector<float> got = run(m, *s, head);
    for (size_t t = split; t < ids.size(); ++t) {
      std::vector<float> step = run(m, *s, {ids[t]});
      got.insert(got.end(), step.begin(), step.end());
    }
    ASSERT_EQ(got.size(), full.size());
    Diff worst;
    for (size_t t = 0; t < ids.size(); ++t) {
      Diff d = compare(got.data() + t * V, full.data() + t * V, V);
      worst.rel_l2 = std::max(worst.rel_l2, d.rel_l2);
      worst.max_abs = std::max(worst.max_abs, d.max_abs);
    }
    std::printf("  prefill %2lld + decode %2lld vs full prefill: rel-L2 %.3e max-abs %.3e\n",
                static_cast<long long>(split), static_cast<long long>(ids.size() - split), worst.rel_l2, worst.max_abs);
    EXPECT_LT(worst.rel_l2, kRelTol) << "split " << split;
  }
}

TEST_P(Consistency, SplitPrefillEqualsOnePrefill) {
  Model& m = cached_model(GetParam());
  const int64_t V = m.config().text.vocab_size;
  const std::vector<int> ids = prompt(GetParam(), 2);
  auto a = m.new_sequence();
  const std::vector<float> full = run(m, *a, ids);
  auto b = m.new_sequence();
  std::vector<int> p1(ids.begin(), ids.begin() + 30), p2(ids.begin() + 30, ids.end());
  run(m, *b, p1);
  const std::vector<float> tail = run(m, *b, p2);
  Diff d = compare(tail.data(), full.data() + 30 * V, tail.size());
  EXPECT_LT(d.rel_l2, kRelTol);
  EXPECT_EQ(b->n_tokens(), static_cast<int64_t>(ids.size()));
}

TEST_P(Consistency, BatchedStepsEqualOneAtATime) {
  Model& m = cached_model(GetParam());
  const int64_t V = m.config().text.vocab_size;
  std::vector<std::vector<int>> prompts = {prompt(GetParam(), 0), prompt(GetParam(), 1), prompt(GetParam(), 2)};
  prompts.push_back({prompts[0][0]});   // a one-token prefill too
  const size_t S = prompts.size();

  // Reference: each sequence alone (prefill, then 6 greedy steps).
  std::vector<std::vector<float>> ref_logits(S);
  std::vector<std::vector<int>> ref_tokens(S);
  for (size_t s = 0; s < S; ++s) {
    auto st = m.new_sequence();
    std::vector<float> l = run(m, *st, prompts[s], true);
    ref_logits[s] = l;
    int tok = argmax(l.data() + (prompts[s].size() - 1) * V, V);
    for (int j = 0; j < 6; ++j) {
      ref_tokens[s].push_back(tok);
      std::vector<float> d = run(m, *st, {tok}, false);
      ref_logits[s].insert(ref_logits[s].end(), d.begin(), d.end());
      tok = argmax(d.data(), V);
    }
  }

  // Batched: all prefills in one call (mixed all_logits), then batched decode.
  std::vector<std::unique_ptr<SequenceState>> states;
  std::vector<std::vector<float>> out(S);
  std::vector<Model::Step> steps;
  for (size_t s = 0; s < S; ++s) {
    states.push_back(m.new_sequence());
    const bool all = s % 2 == 0;
    out[s].assign((all ? prompts[s].size() : 1) * V, 0.0f);
    steps.push_back({states[s].get(), prompts[s].data(), static_cast<int64_t>(prompts[s].size()), out[s].data(), all});
  }
  m.forward(steps);
  for (size_t s = 0; s < S; ++s) {
    const size_t T = prompts[s].size();
    if (s % 2 == 0) {
      Diff d = compare(out[s].data(), ref_logits[s].data(), T * V);
      EXPECT_LT(d.rel_l2, kRelTol) << "batched prefill, sequence " << s;
    } else {
      Diff d = compare(out[s].data(), ref_logits[s].data() + (T - 1) * V, V);
      EXPECT_LT(d.rel_l2, kRelTol) << "batched prefill last row, sequence " << s;
    }
  }
  std::vector<int> toks(S);
  for (int j = 0; j < 6; ++j) {
    steps.clear();
    for (size_t s = 0; s < S; ++s) {
      toks[s] = ref_tokens[s][j];
      out[s].assign(V, 0.0f);
      steps.push_back({states[s].get(), &toks[s], 1, out[s].data(), j % 2 == 1});
    }
    m.forward(steps);
    for (size_t s = 0; s < S; ++s) {
      const float* want = ref_logits[s].data() + (prompts[s].size() + j) * V;
      Diff d = compare(out[s].data(), want, V);
      EXPECT_LT(d.rel_l2, kRelTol) << "batched decode step " << j << ", sequence " << s;
      EXPECT_EQ(argmax(out[s].data(), V), j + 1 < 6 ? ref_tokens[s][j + 1] : argmax(want, V));
    }
  }
}

TEST_P(Consistency, ResetAndClone) {
  Model& m = cached_model(GetParam());
  const int64_t V = m.config().text.vocab_size;
  const std::vector<int> ids = prompt(GetParam(), 1);
  auto s = m.new_sequence();
  const size_t empty_bytes = s->memory_bytes();
  const std::vector<float> first = run(m, *s, ids, false);
  EXPECT_GT(s->memory_bytes(), empty_bytes);   // KV blocks were added
  auto c = s->clone();
  EXPECT_EQ(c->n_tokens(), s->n_tokens());
  const std::vector<float> a = run(m, *s, {7}, false);
  const std::vector<float> b = run(m, *c, {7}, false);
  EXPECT_EQ(a, b);
  s->reset();
  EXPECT_EQ(s->n_tokens(), 0);
  EXPECT_EQ(s->memory_bytes(), empty_bytes);
  const std::vector<float> again = run(m, *s, ids, false);
  Diff d = compare(again.data(), first.data(), V);
  EXPECT_EQ(d.max_abs, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Consistency, ::testing::Values(s1_bf16(), s1_gptq()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return short_name(info.param).find("gptq") != std::string::npos ? std::string("gptq")
                                                                               : std::string("bf16");
                         });

TEST(ForwardErrors, BadInputThrowsWithoutTouchingState) {
  Model& m = cached_model(s1_bf16());
  const int V = m.config().text.vocab_size;
  auto s = m.new_sequence();
  std::vector<float> logits(V);
  std::vector<int> bad = {1, 2, V};
  Model::Step st{s.get(), bad.data(), 3, logits.data(), false};
  try {
    m.forward({st});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id " + std::to_string(V)), std::string::npos) << e.what();
  }
  EXPECT_EQ(s->n_tokens(), 0);
  std::vector<int> neg = {-1};
  st.tokens = neg.data();
  st.n_tokens = 1;
  EXPECT_THROW(m.forward({st}), Error);

  // Past max_position_embeddings.
  std::vector<int> ok = {1, 2};
  s->advance(m.max_context() - 1);
  st.tokens = ok.data();
  st.n_tokens = 2;
  try {
    m.forward({st});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position " + std::to_string(m.max_context())), std::string::npos)
        << e.what();
  }
  s->reset();

  // Same state twice, null pointers, no tokens.
  st.n_tokens = 1;
  EXPECT_THROW(m.forward({st, st}), Error);
  Model::Step nostate = st;
  nostate.state = nullptr;
  EXPECT_THROW(m.forward({nostate}), Error);
  Model::Step nologits = st;
  nologits.logits = nullptr;
  EXPECT_THROW(m.forward({nologits}), Error);
  Model::Step empty = st;
  empty.n_tokens = 0;
  EXPECT_THROW(m.forward({empty}), Error);
  EXPECT_EQ(s->n_tokens(), 0);
}

}  // namespace
}  // namespace qinfer::test

namespace qinfer::test {
namespace {

TEST(KvCache, BlocksGrowAndKeepRows) {
  KvCache c(3);
  EXPECT_EQ(c.capacity(), 0);
  const int64_t n = 2 * KvCache::kBlockTokens + 17;
  c.reserve(n);
  EXPECT_EQ(c.capacity(), 3 * KvCache::kBlockTokens);
  for (int64_t p = 0; p < n; ++p)
    for (int j = 0; j < 3; ++j) {
      c.k_at(p, 0)[j] = static_cast<float>(p * 10 + j);
      c.v_at(p, 0)[j] = -static_cast<float>(p * 10 + j);
    }
  KvCache d;
  d.copy_from(c, n);
  for (int64_t p = 0; p < n; ++p)
    for (int j = 0; j < 3; ++j) {
      ASSERT_EQ(c.k_at(p, 0)[j], p * 10 + j);
      ASSERT_EQ(d.v_at(p, 0)[j], -(p * 10 + j));
    }
  EXPECT_EQ(c.bytes(), 2u * 3 * KvCache::kBlockTokens * 3 * sizeof(float));
  c.clear();
  EXPECT_EQ(c.capacity(), 0);
}

// The real model's width (2 kv heads x 256): blocks of 1 MiB key/value pairs,
// two per 2 MiB huge-page chunk, each head's rows contiguous in a block (put
// scatters a row's heads), rows zero until written, kept across growth.
TEST(KvCache, LargeCachesUseHugePageChunks) {
  const int64_t W = 512, heads = 2, hd = W / heads, B = KvCache::kBlockTokens, n = 2 * B + 17;
  KvCache c(W, heads);
  EXPECT_EQ(c.head_dim(), hd);
  c.reserve(n);
  EXPECT_EQ(c.capacity(), 3 * B);
  EXPECT_EQ(c.bytes(), size_t{4} << 20);                       // two chunks, the second half used
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.k_block(0)) % (size_t{2} << 20), 0u);
  EXPECT_EQ(c.v_block(0), c.k_block(0) + B * W);                 // a block pair lies together
  EXPECT_EQ(c.k_block(1), c.v_block(0) + B * W);
  EXPECT_EQ(c.k_at(B + 5, 1), c.k_block(1) + (B + 5) * hd);      // head-major: head 1 after head 0's B rows
  EXPECT_EQ(c.k_at(n - 1, 1)[hd - 1], 0.0f);
  std::vector<float> kr(W), vr(W);
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t i = 0; i < W; ++i) kr[i] = static_cast<float>(p * W + i), vr[i] = -kr[i];
    c.put(p, kr.data(), vr.data());
  }
  c.reserve(5 * B);                                              // grows into the half-used chunk, then a new one
  EXPECT_EQ(c.bytes(), size_t{6} << 20);
  EXPECT_EQ(c.k_at(4 * B, 0)[3], 0.0f);
  KvCache d;
  d.copy_from(c, n);
  EXPECT_EQ(d.heads(), heads);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t g = 0; g < heads; ++g)
      for (int64_t e : {int64_t{0}, (p * 7) % hd, hd - 1}) {
        const float want = static_cast<float>(p * W + g * hd + e);
        ASSERT_EQ(c.k_at(p, g)[e], want);
        ASSERT_EQ(c.v_at(p, g)[e], -want);
        ASSERT_EQ(d.k_at(p, g)[e], want);
        ASSERT_EQ(d.v_at(p, g)[e], -want);
      }
  EXPECT_EQ(d.capacity(), 3 * B);
  c.clear();
  EXPECT_EQ(c.capacity(), 0);
  EXPECT_EQ(c.bytes(), 0u);
  KvCache none;
  none.reserve(0);   // nothing to do
  EXPECT_THROW(none.reserve(1), Error);
  EXPECT_THROW(KvCache(W, 3), Error);   // 3 heads do not divide 512
}

// A sequence longer than one KV block (and several delta-rule chunks): one
// prefill equals chunked prefills plus decode steps across the block boundary.
TEST(LongSequence, AcrossKvBlocks) {
  Model& m = cached_model(fixtures_dir() + "/qwen35moe-tiny-s1/gptq");
  const int64_t V = m.config().text.vocab_size;
  const int64_t T = KvCache::kBlockTokens + 60;
  const std::vector<int> ids = pseudo_prompt(T, 37, 11);
  auto a = m.new_sequence();
  const std::vector<float> full = run(m, *a, ids);
  auto b = m.new_sequence();
  std::vector<float> got;
  int64_t t = 0;
  // Chunks of >= 128 tokens take the same dense prefill kernel as the full prefill
  // (ops kDensePanelMin): two fp32 kernels differ by ~1e-7, and this random tiny
  // model routes some tokens by margins that small (a flip at token 142 of 316 with
  // chunks of 100 moved the logits by 2e-3; every token before it agreed to 1e-6).
  for (int64_t chunk : {128, 150}) {
    std::vector<int> part(ids.begin() + t, ids.begin() + t + chunk);
    std::vector<float> l = run(m, *b, part);
    got.insert(got.end(), l.begin(), l.end());
    t += chunk;
  }
  for (; t < T; ++t) {
    std::vector<float> l = run(m, *b, {ids[t]});
    got.insert(got.end(), l.begin(), l.end());
  }
  Diff d = compare(got.data(), full.data(), full.size());
  std::printf("  %lld tokens, chunked prefill + decode vs one prefill: rel-L2 %.3e max-abs %.3e\n",
              static_cast<long long>(T), d.rel_l2, d.max_abs);
  EXPECT_LT(d.rel_l2, 1e-4);
  EXPECT_EQ(argmax(got.data() + (T - 1) * V, V), argmax(full.data() + (T - 1) * V, V));
}

}  // namespace
}  // namespace qinfer::test

namespace qinfer::test {
namespace {

// More than Model::kMaxCallTokens tokens: forward() runs several passes; the
// traced call (always one pass) is the reference.
TEST(LongSequence, CallsSplitIntoPassesMatchOnePass) {
  Model& m = cached_model(fixtures_dir() + "/qwen35moe-tiny-s2/bf16");
  const int64_t V = m.config().text.vocab_size;
  const int64_t T = Model::kMaxCallTokens + 100;
  const std::vector<int> ids = pseudo_prompt(T, 53, 7);
  auto a = m.new_sequence();
  ForwardTrace tr;
  const std::vector<float> one = run(m, *a, ids, true, &tr);
  auto b = m.new_sequence();
  const std::vector<float> split = run(m, *b, ids, true);
  EXPECT_EQ(b->n_tokens(), T);
  Diff d = compare(split.data(), one.data(), one.size());
  EXPECT_LT(d.rel_l2, 1e-5);
  // Last-row-only plus a decode step of another sequence in the same call.
  auto c = m.new_sequence(), e = m.new_sequence();
  std::vector<float> last(V), other(V);
  std::vector<int> tok = {42};
  m.forward({{c.get(), ids.data(), T, last.data(), false}, {e.get(), tok.data(), 1, other.data(), false}});
  EXPECT_LT(compare(last.data(), one.data() + (T - 1) * V, V).rel_l2, 1e-5);
  auto f = m.new_sequence();
  const std::vector<float> alone = run(m, *f, tok, false);
  EXPECT_LT(compare(other.data(), alone.data(), V).rel_l2, 1e-5);
}

}  // namespace
}  // namespace qinfer::test
