// The MTP draft head against the golden mtp_logits / mtp_logits_last, and the
// hidden-state output of forward() that feeds it.
#include <gtest/gtest.h>

#include "golden.h"
#include "ops/delta_rule.h"
#include "util/error.h"

namespace qinfer::test {
namespace {

constexpr double kRelTol = 1e-3;   // relative L2, as golden_test.cc
constexpr double kAbsTol = 1e-3;   // max abs on logits: FORMAT.md's recommended float32 tolerance

Model& mtp_model(const std::string& dir) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& m = models[dir];
  if (!m) {
    LoadOptions o;
    o.threads = 2;
    o.load_mtp = true;
    m = Model::load(dir, o);
  }
  return *m;
}

class MtpGolden : public ::testing::TestWithParam<std::string> {};

// On every kernel path the host runs (golden.h kernel_paths), as GoldenTest.
TEST_P(MtpGolden, DraftLogits) {
  const std::string dir = GetParam();
  Model& m = mtp_model(dir);
  ASSERT_TRUE(m.has_mtp());
  Golden g(dir);
  const int64_t V = m.config().text.vocab_size, H = m.config().text.hidden_size;
  for (const std::string& path : kernel_paths()) {
    SCOPED_TRACE("kernel path " + path);
    KernelPathGuard kernels(path);
    for (int p = 0; p < g.num_prompts(); ++p) {
      const std::string pre = "p" + std::to_string(p) + ".";
      const std::vector<int> ids = g.i32(pre + "input_ids");
      const int64_t T = static_cast<int64_t>(ids.size());
      auto s = m.new_sequence();
      std::vector<float> logits(T * V), hidden(T * H);
      m.forward({{s.get(), ids.data(), T, logits.data(), true, hidden.data()}});
      const std::vector<float> want_h = g.f32(pre + "final_hidden");
      EXPECT_LT(compare(hidden.data(), want_h.data(), want_h.size()).max_abs, 5e-4);

      const std::vector<int> next = g.i32(pre + "mtp_input_ids");
      std::vector<float> mlog(T * V);
      m.forward_mtp({{s.get(), next.data(), hidden.data(), T, mlog.data(), true}});
      EXPECT_EQ(s->mtp_tokens(), T);
      const std::vector<float> last = g.f32(pre + "mtp_logits_last");
      Diff dl = compare(mlog.data() + (T - 1) * V, last.data(), V);
      std::printf("  %-28s p%d MTP last row      rel-L2 %.3e  max-abs %.3e  (%s)\n", short_name(dir).c_str(), p,
                  dl.rel_l2, dl.max_abs, path.c_str());
      EXPECT_LT(dl.rel_l2, kRelTol);
      EXPECT_LT(dl.max_abs, kAbsTol);
      if (g.has(pre + "mtp_logits")) {
        const std::vector<float> all = g.f32(pre + "mtp_logits");
        Diff d = compare(mlog.data(), all.data(), all.size());
        std::printf("  %-28s p%d MTP all rows      rel-L2 %.3e  max-abs %.3e  (%s)\n", short_name(dir).c_str(), p,
                    d.rel_l2, d.max_abs, path.c_str());
        EXPECT_LT(d.rel_l2, kRelTol);
        EXPECT_LT(d.max_abs, kAbsTol);
      }

      // Row by row (an MTP cache built incrementally) gives the same last row.
      auto s2 = m.new_sequence();
      std::vector<float> one(V);
      for (int64_t t = 0; t < T; ++t)
        m.forward_mtp({{s2.get(), next.data() + t, hidden.data() + t * H, 1, one.data(), false}});
      EXPECT_LT(compare(one.data(), last.data(), V).rel_l2, kRelTol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MtpGolden, ::testing::ValuesIn(fixture_dirs()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return fixture_test_name(i.param); });

TEST(Mtp, NeedsTheHead) {
  Model& m = cached_model(fixtures_dir() + "/qwen35moe-tiny-s1/bf16");
  auto s = m.new_sequence();
  std::vector<int> next = {1};
  std::vector<float> h(m.config().text.hidden_size), l(m.config().text.vocab_size);
  EXPECT_THROW(m.forward_mtp({{s.get(), next.data(), h.data(), 1, l.data(), false}}), Error);
}

}  // namespace
}  // namespace qinfer::test

namespace qinfer::test {
namespace {

// Speculative verification at the model level: after the prompt, one keep_states
// step of [g0, d1..dK] where the drafts are the golden greedy tokens corrupted from
// index `bad` on; its rows must equal the golden decode logits up to the first wrong
// input, and after rollback(keep) the state must be exactly that of plain decoding:
// the following decode steps reproduce the golden decode logits.
class VerifyRollback : public ::testing::TestWithParam<std::string> {};

TEST_P(VerifyRollback, KeepsExactlyTheAcceptedPrefix) {
  const std::string dir = GetParam();
  Model& m = cached_model(dir);
  Golden g(dir);
  const int64_t V = m.config().text.vocab_size;
  for (int p = 0; p < g.num_prompts(); ++p) {
    const std::string pre = "p" + std::to_string(p) + ".";
    const std::vector<int> ids = g.i32(pre + "input_ids");
    const std::vector<int> greedy = g.i32(pre + "greedy_tokens");
    const std::vector<float> dec = g.f32(pre + "decode_logits");   // [16][V]
    for (int K : {1, 3, 4}) {
      for (int keep = 1; keep <= K + 1; ++keep) {
        auto s = m.new_sequence();
        run(m, *s, ids, false);
        // Inputs: greedy[0..keep-1] correct, then wrong tokens.
        std::vector<int> in(greedy.begin(), greedy.begin() + K + 1);
        for (int t = keep; t <= K; ++t) in[t] = (greedy[t] + 7) % 500;
        std::vector<float> logits((K + 1) * V);
        Model::Step st;
        st.state = s.get();
        st.tokens = in.data();
        st.n_tokens = K + 1;
        st.logits = logits.data();
        st.all_logits = true;
        st.keep_states = true;
        m.forward({st});
        for (int t = 0; t < keep; ++t) {
          Diff d = compare(logits.data() + t * V, dec.data() + t * V, V);
          EXPECT_LT(d.max_abs, 1e-3) << short_name(dir) << " p" << p << " K" << K << " keep " << keep << " row " << t;
        }
        EXPECT_EQ(s->verify_tokens(), K + 1);
        s->rollback(keep);
        EXPECT_EQ(s->n_tokens(), static_cast<int64_t>(ids.size()) + keep);
        EXPECT_EQ(s->verify_tokens(), 0);
        EXPECT_THROW(s->rollback(1), Error);   // nothing pending any more
        // Continue with plain decoding from greedy[keep]: rows keep.. of the golden decode.
        for (int t = keep; t < keep + 3 && t < 16; ++t) {
          std::vector<float> one = run(m, *s, {greedy[t]}, false);
          Diff d = compare(one.data(), dec.data() + t * V, V);
          EXPECT_LT(d.max_abs, 1e-3) << short_name(dir) << " p" << p << " K" << K << " keep " << keep
                                     << " decode " << t;
          EXPECT_EQ(argmax(one.data(), V), t + 1 < 16 ? greedy[t + 1] : argmax(dec.data() + t * V, V));
        }
      }
    }
  }
}

// The recurrent states a verify pass and its rollback leave are bit for bit those of
// the delta rule run one token at a time, in place (as decode runs it), from the state
// before the step on the inputs the pass kept: after the pass (all tokens kept) and after
// rollback(keep) for every keep, on every kernel path. (Decode itself may differ from a
// verify pass in the last bits: its projections run one row instead of several.)
TEST_P(VerifyRollback, RecurrentStatesAreThoseOfTokenByTokenDecoding) {
  const std::string dir = GetParam();
  Model& m = cached_model(dir);
  Golden g(dir);
  const int64_t V = m.config().text.vocab_size;
  const std::vector<int> ids = g.i32("p0.input_ids"), greedy = g.i32("p0.greedy_tokens");
  const int K = 3;
  for (const std::string& path : kernel_paths()) {
    SCOPED_TRACE("kernel path " + path);
    KernelPathGuard kernels(path);
    for (int keep = 1; keep <= K + 1; ++keep) {
      auto s = m.new_sequence();
      run(m, *s, ids, false);
      const StateShape& sh = s->shape();
      std::vector<std::vector<float>> before;
      for (int l = 0; l < sh.num_linear_layers; ++l) before.push_back(s->delta(l).ssm);
      std::vector<int> in(greedy.begin(), greedy.begin() + K + 1);
      for (int t = keep; t <= K; ++t) in[t] = (greedy[t] + 11) % 500;
      std::vector<float> logits((K + 1) * V);
      m.forward({{s.get(), in.data(), K + 1, logits.data(), true, nullptr, true}});
      // The delta rule of tokens 0..n-1 on the kept inputs, one call per token and head.
      const int64_t nv = sh.value_heads, dk = sh.key_dim, dv = sh.value_dim, kdim = sh.key_heads * dk;
      auto by_token = [&](int l, int n) {
        std::vector<float> S = before[l], o(dv);
        const DeltaNetState& d = s->delta(l);
        for (int t = 0; t < n; ++t)
          for (int64_t h = 0; h < nv; ++h) {
            ops::DeltaRuleIO io;
            io.T = 1;
            io.dk = dk;
            io.dv = dv;
            io.k = d.spec_kv.data() + t * (kdim + nv * dv) + (h / (nv / sh.key_heads)) * dk;
            io.q = io.k;
            io.v = d.spec_kv.data() + t * (kdim + nv * dv) + kdim + h * dv;
            io.g = d.spec_g.data() + t * nv + h;
            io.beta = d.spec_beta.data() + t * nv + h;
            io.o = o.data();
            io.S = S.data() + h * dk * dv;
            ops::delta_rule_recurrent(io);
          }
        return S;
      };
      std::vector<std::vector<float>> want;
      for (int l = 0; l < sh.num_linear_layers; ++l) {
        EXPECT_TRUE(s->delta(l).ssm == by_token(l, K + 1)) << short_name(dir) << " after the pass, layer " << l;
        want.push_back(by_token(l, keep));
      }
      s->rollback(keep);
      for (int l = 0; l < sh.num_linear_layers; ++l)
        EXPECT_TRUE(s->delta(l).ssm == want[l]) << short_name(dir) << " keep " << keep << " layer " << l;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VerifyRollback, ::testing::ValuesIn(fixture_dirs()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return fixture_test_name(i.param); });

TEST(VerifyRollback, BadUseIsAnError) {
  Model& m = cached_model(fixtures_dir() + "/qwen35moe-tiny-s1/bf16");
  auto s = m.new_sequence();
  EXPECT_THROW(s->rollback(1), Error);
  std::vector<int> ids = {1, 2, 3};
  std::vector<float> logits(3 * m.config().text.vocab_size);
  Model::Step st{s.get(), ids.data(), 3, logits.data(), true, nullptr, true};
  m.forward({st});
  EXPECT_THROW(s->rollback(0), Error);
  EXPECT_THROW(s->rollback(4), Error);
  s->rollback(3);
  EXPECT_EQ(s->n_tokens(), 3);
  std::vector<int> many(Model::kMaxVerifyTokens + 1, 5);
  std::vector<float> big(many.size() * m.config().text.vocab_size);
  Model::Step st2{s.get(), many.data(), static_cast<int64_t>(many.size()), big.data(), true, nullptr, true};
  EXPECT_THROW(m.forward({st2}), Error);
  EXPECT_EQ(s->n_tokens(), 3);
}

// The MTP cache can skip the head: logits == nullptr brings the cache up to date only,
// and later rows give the same logits as a run that computed every row.
TEST(Mtp, CacheOnlyStepsMatch) {
  const std::string dir = fixtures_dir() + "/qwen35moe-tiny-s1/bf16";
  Model& m = mtp_model(dir);
  Golden g(dir);
  const int64_t V = m.config().text.vocab_size, H = m.config().text.hidden_size;
  const std::vector<int> ids = g.i32("p1.input_ids");
  const std::vector<int> next = g.i32("p1.mtp_input_ids");
  const int64_t T = static_cast<int64_t>(ids.size());
  auto s = m.new_sequence();
  std::vector<float> logits(T * V), hidden(T * H);
  m.forward({{s.get(), ids.data(), T, logits.data(), true, hidden.data()}});
  m.forward_mtp({{s.get(), next.data(), hidden.data(), T - 1, nullptr, false}});
  std::vector<float> last(V);
  m.forward_mtp({{s.get(), next.data() + T - 1, hidden.data() + (T - 1) * H, 1, last.data(), false}});
  EXPECT_LT(compare(last.data(), g.f32("p1.mtp_logits_last").data(), V).rel_l2, kRelTol);
}

// Prompt p0 of a fixture through the main model on s: the MTP head's inputs (the next
// tokens and the final hidden rows) and the main logits.
struct MtpInputs {
  std::vector<int> ids, next;
  int64_t T = 0;
  std::vector<float> logits, hidden;
};
MtpInputs main_pass(Model& m, const Golden& g, SequenceState& s) {
  MtpInputs in;
  in.ids = g.i32("p0.input_ids");
  in.next = g.i32("p0.mtp_input_ids");
  in.T = static_cast<int64_t>(in.ids.size());
  in.logits.resize(in.T * m.config().text.vocab_size);
  in.hidden.resize(in.T * m.config().text.hidden_size);
  m.forward({{&s, in.ids.data(), in.T, in.logits.data(), true, in.hidden.data()}});
  return in;
}

// The cheaper draft heads: vocab_limit N gives the first N columns of the full draft
// logits; int8_head gives logits close to the BF16 ones (an int8 per-row copy of lm_head).
TEST(Mtp, CheaperDraftHeads) {
  const std::string dir = fixtures_dir() + "/qwen35moe-tiny-s1/bf16";
  Model& m = mtp_model(dir);
  Golden g(dir);
  const int64_t V = m.config().text.vocab_size;
  auto s = m.new_sequence();
  MtpInputs in = main_pass(m, g, *s);
  const int64_t T = in.T;
  const std::vector<int>& next = in.next;
  std::vector<float>& logits = in.logits;
  const std::vector<float>& hidden = in.hidden;
  auto draft = [&](int64_t limit, bool int8) {
    std::vector<float> out(T * (limit > 0 ? limit : V));
    m.forward_mtp({{s.get(), next.data(), hidden.data(), T, out.data(), true, nullptr, limit, int8}});
    s->rewind_mtp(0);
    return out;
  };
  const std::vector<float> full = draft(0, false), q8 = draft(0, true), part = draft(100, false),
                           part_q8 = draft(100, true);
  const Diff dq = compare(q8.data(), full.data(), full.size());
  std::printf("  int8 draft head vs bf16: rel-L2 %.3e max-abs %.3e\n", dq.rel_l2, dq.max_abs);
  EXPECT_LT(dq.rel_l2, 2e-2);
  EXPECT_GT(dq.max_abs, 0.0) << "the int8 head is a different encoding";
  for (int64_t t = 0; t < T; ++t) {
    EXPECT_LT(compare(part.data() + t * 100, full.data() + t * V, 100).max_abs, 1e-6) << "row " << t;
    EXPECT_LT(compare(part_q8.data() + t * 100, q8.data() + t * V, 100).max_abs, 1e-6) << "row " << t;
  }
  EXPECT_THROW(m.forward_mtp({{s.get(), next.data(), hidden.data(), 1, logits.data(), false, nullptr, 0, true},
                              {m.new_sequence().get(), next.data(), hidden.data(), 1, logits.data(), false}}),
               Error);
}

// last_only (and logits without all_logits): the rows before the last only write their
// keys and values; the last row's logits and MTP hidden, and what a following row gets
// from the cache, are those of a step that ran every row (up to the rounding of the
// key/value products, which run on fewer rows); last_only with all_logits is refused.
TEST(Mtp, RowsWithoutOutputsOnlyUpdateTheCache) {
  for (const std::string fx : {"qwen35moe-tiny-s1/bf16", "qwen35moe-tiny-s2/gptq"}) {
    const std::string dir = fixtures_dir() + "/" + fx;
    Model& m = mtp_model(dir);
    Golden g(dir);
    const int64_t V = m.config().text.vocab_size, H = m.config().text.hidden_size;
    auto main_seq = m.new_sequence();
    const MtpInputs in = main_pass(m, g, *main_seq);
    const int64_t T = in.T;
    const std::vector<int>& next = in.next;
    const std::vector<float>& hidden = in.hidden;
    auto full = m.new_sequence(), last = m.new_sequence();
    std::vector<float> fl(T * V), fh(T * H), ll(V), lh(H);
    m.forward_mtp({{full.get(), next.data(), hidden.data(), T - 1, fl.data(), true, fh.data()}});
    Model::MtpStep st{last.get(), next.data(), hidden.data(), T - 1, ll.data(), false, lh.data()};
    st.last_only = true;
    m.forward_mtp({st});
    EXPECT_EQ(last->mtp_tokens(), full->mtp_tokens());
    const Diff dl = compare(ll.data(), fl.data() + (T - 2) * V, V), dh = compare(lh.data(), fh.data() + (T - 2) * H, H);
    EXPECT_LT(dl.rel_l2, 1e-5) << fx;
    EXPECT_LT(dh.rel_l2, 1e-5) << fx;
    EXPECT_EQ(argmax(ll.data(), V), argmax(fl.data() + (T - 2) * V, V)) << fx;
    // The next row reads the cache those rows wrote: it matches the golden last row.
    std::vector<float> a(V), b(V);
    m.forward_mtp({{full.get(), next.data() + T - 1, hidden.data() + (T - 1) * H, 1, a.data(), false}});
    m.forward_mtp({{last.get(), next.data() + T - 1, hidden.data() + (T - 1) * H, 1, b.data(), false}});
    EXPECT_LT(compare(b.data(), a.data(), V).rel_l2, 1e-5) << fx;
    EXPECT_LT(compare(b.data(), g.f32("p0.mtp_logits_last").data(), V).rel_l2, kRelTol) << fx;
    st.all_logits = true;
    EXPECT_THROW(m.forward_mtp({st}), Error);
  }
}

// LoadOptions::draft_layer_int8: the MTP layer (fc, attention, experts, shared expert)
// re-encoded as int8 at load. Its draft logits stay near the exact ones (well inside the
// bar of --dense int8 against golden, DenseInt8Golden's 0.25; on these tiny random-weight
// fixtures a flipped expert choice moves the logits most), its weights take fewer bytes, and the
// main model is untouched (its logits and hidden states are bit for bit the same).
TEST(Mtp, Int8DraftLayer) {
  for (const std::string fx : {"qwen35moe-tiny-s1/bf16", "qwen35moe-tiny-s2/gptq"}) {
    const std::string dir = fixtures_dir() + "/" + fx;
    Model& exact = mtp_model(dir);
    LoadOptions o;
    o.threads = 2;
    o.load_mtp = true;
    o.draft_layer_int8 = true;
    auto q = Model::load(dir, o);
    ASSERT_TRUE(q->has_mtp());
    EXPECT_LT(q->weight_bytes(), exact.weight_bytes()) << fx;
    Golden g(dir);
    const int64_t V = exact.config().text.vocab_size, H = exact.config().text.hidden_size;
    for (int p = 0; p < g.num_prompts(); ++p) {
      const std::string pre = "p" + std::to_string(p) + ".";
      const std::vector<int> ids = g.i32(pre + "input_ids"), next = g.i32(pre + "mtp_input_ids");
      const int64_t T = static_cast<int64_t>(ids.size());
      std::vector<float> le(T * V), he(T * H), lq(T * V), hq(T * H), me(T * V), mq(T * V);
      auto se = exact.new_sequence(), sq = q->new_sequence();
      exact.forward({{se.get(), ids.data(), T, le.data(), true, he.data()}});
      q->forward({{sq.get(), ids.data(), T, lq.data(), true, hq.data()}});
      EXPECT_EQ(lq, le) << fx << " p" << p << ": the main model's logits";
      EXPECT_EQ(hq, he) << fx << " p" << p << ": the main model's hidden states";
      exact.forward_mtp({{se.get(), next.data(), he.data(), T, me.data(), true}});
      q->forward_mtp({{sq.get(), next.data(), hq.data(), T, mq.data(), true}});
      const Diff d = compare(mq.data(), me.data(), me.size());
      std::printf("  %-28s p%d int8 MTP layer vs exact: rel-L2 %.3e max-abs %.3e\n", fx.c_str(), p, d.rel_l2,
                  d.max_abs);
      EXPECT_LT(d.rel_l2, 0.1) << fx << " p" << p;   // measured 0.010-0.022
      EXPECT_GT(d.max_abs, 0.0) << fx << " p" << p << ": the int8 layer is a different encoding";
    }
  }
}

}  // namespace
}  // namespace qinfer::test
