// The text forward pass against the float64 golden outputs of every fixture
// (shared/fixtures/text/<fixture>/<variant>): prefill logits at every position,
// routing, final hidden states, per-layer residuals, greedy continuation and the
// decode-step logits.
#include <gtest/gtest.h>

#include "golden.h"

namespace qinfer::test {
namespace {

constexpr double kRelTol = 1e-3;       // relative L2 on logits (the bar)
constexpr double kHiddenAtol = 5e-4;   // golden.json recommended_tolerance


// (fixture folder, kernel path + exact BF16 kernel): every kernel the host can run.
class GoldenTest : public ::testing::TestWithParam<std::tuple<std::string, KernelConfig>> {};

TEST_P(GoldenTest, PrefillLogitsRoutingAndHidden) {
  const std::string dir = std::get<0>(GetParam());
  KernelConfigGuard kernels(std::get<1>(GetParam()));
  Model& m = cached_model(dir);
  Golden g(dir);
  const int64_t V = m.config().text.vocab_size, H = m.config().text.hidden_size;
  const int K = m.config().text.num_experts_per_tok;
  ASSERT_GT(g.num_prompts(), 0);
  for (int p = 0; p < g.num_prompts(); ++p) {
    const std::string pre = "p" + std::to_string(p) + ".";
    const std::vector<int> ids = g.i32(pre + "input_ids");
    auto s = m.new_sequence();
    ForwardTrace trace;
    const std::vector<float> logits = run(m, *s, ids, true, &trace);
    const std::vector<float> want = g.f32(pre + "logits");
    ASSERT_EQ(logits.size(), want.size());
    Diff d = compare(logits.data(), want.data(), want.size());
    std::printf("  %-28s p%d T=%3zu prefill logits  rel-L2 %.3e  max-abs %.3e\n", short_name(dir).c_str(), p,
                ids.size(), d.rel_l2, d.max_abs);
    EXPECT_LT(d.rel_l2, kRelTol) << dir << " prompt " << p;
    // Every position, not just the aggregate.
    for (size_t t = 0; t < ids.size(); ++t) {
      Diff dt = compare(logits.data() + t * V, want.data() + t * V, V);
      EXPECT_LT(dt.rel_l2, kRelTol) << dir << " prompt " << p << " position " << t;
    }
    EXPECT_EQ(s->n_tokens(), static_cast<int64_t>(ids.size()));

    const std::vector<float> hid = g.f32(pre + "final_hidden");
    Diff dh = compare(trace.final_hidden.data(), hid.data(), hid.size());
    EXPECT_LT(dh.max_abs, kHiddenAtol) << dir << " prompt " << p << " final hidden";

    if (g.has(pre + "router_topk")) {
      const std::vector<int> topk = g.i32(pre + "router_topk");   // [layers][T][K]
      const size_t per_layer = ids.size() * K;
      ASSERT_EQ(topk.size(), trace.router_topk.size() * per_layer);
      int mismatches = 0;
      for (size_t L = 0; L < trace.router_topk.size(); ++L)
        for (size_t i = 0; i < per_layer; ++i) mismatches += trace.router_topk[L][i] != topk[L * per_layer + i];
      EXPECT_EQ(mismatches, 0) << dir << " prompt " << p << " router choices differ";
    }
    if (g.has(pre + "layer_outputs")) {
      const std::vector<float> lo = g.f32(pre + "layer_outputs");  // [layers+1][T][H]
      ASSERT_EQ(lo.size(), trace.layer_outputs.size() * ids.size() * H);
      for (size_t L = 0; L < trace.layer_outputs.size(); ++L) {
        const float* w = lo.data() + L * ids.size() * H;
        Diff dl = compare(trace.layer_outputs[L].data(), w, ids.size() * H);
        EXPECT_LT(dl.rel_l2, kRelTol) << dir << " prompt " << p << " residual after layer " << int(L) - 1;
      }
    }
  }
}

TEST_P(GoldenTest, GreedyContinuationAndDecodeLogits) {
  const std::string dir = std::get<0>(GetParam());
  KernelConfigGuard kernels(std::get<1>(GetParam()));
  Model& m = cached_model(dir);
  Golden g(dir);
  const int64_t V = m.config().text.vocab_size;
  for (int p = 0; p < g.num_prompts(); ++p) {
    const std::string pre = "p" + std::to_string(p) + ".";
    const std::vector<int> ids = g.i32(pre + "input_ids");
    const std::vector<int> greedy = g.i32(pre + "greedy_tokens");
    const std::vector<float> dlog = g.f32(pre + "decode_logits");
    auto s = m.new_sequence();
    std::vector<float> last = run(m, *s, ids, false);
    std::vector<int> got;
    int tok = argmax(last.data(), V);
    double worst_rel = 0, worst_abs = 0;
    for (size_t j = 0; j < greedy.size(); ++j) {
      got.push_back(tok);
      std::vector<float> step = run(m, *s, {tok}, false);
      Diff d = compare(step.data(), dlog.data() + j * V, V);
      worst_rel = std::max(worst_rel, d.rel_l2);
      worst_abs = std::max(worst_abs, d.max_abs);
      EXPECT_LT(d.rel_l2, kRelTol) << dir << " prompt " << p << " decode step " << j;
      tok = argmax(step.data(), V);
    }
    std::printf("  %-28s p%d decode x%zu      rel-L2 %.3e  max-abs %.3e (worst step)\n", short_name(dir).c_str(), p,
                greedy.size(), worst_rel, worst_abs);
    EXPECT_EQ(got, greedy) << dir << " prompt " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest,
                         ::testing::Combine(::testing::ValuesIn(fixture_dirs()), ::testing::ValuesIn(kernel_configs())),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, KernelConfig>>& i) {
                           return fixture_test_name(std::get<0>(i.param)) + "_" + std::get<1>(i.param).name();
                         });

TEST(GoldenFixtures, Present) { EXPECT_GE(fixture_dirs().size(), 4u) << fixtures_dir(); }

}  // namespace
}  // namespace qinfer::test
