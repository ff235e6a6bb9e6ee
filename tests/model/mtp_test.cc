// The MTP draft head against the golden mtp_logits / mtp_logits_last, and the
// hidden-state output of forward() that feeds it.
#include <gtest/gtest.h>

#include "golden.h"
#include "util/error.h"

namespace qinfer::test {
namespace {

constexpr double kRelTol = 1e-3;

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

TEST_P(MtpGolden, DraftLogits) {
  const std::string dir = GetParam();
  Model& m = mtp_model(dir);
  ASSERT_TRUE(m.has_mtp());
  Golden g(dir);
  const int64_t V = m.config().text.vocab_size, H = m.config().text.hidden_size;
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
    std::printf("  %-28s p%d MTP last row      rel-L2 %.3e  max-abs %.3e\n", short_name(dir).c_str(), p, dl.rel_l2,
                dl.max_abs);
    EXPECT_LT(dl.rel_l2, kRelTol);
    if (g.has(pre + "mtp_logits")) {
      const std::vector<float> all = g.f32(pre + "mtp_logits");
      Diff d = compare(mlog.data(), all.data(), all.size());
      std::printf("  %-28s p%d MTP all rows      rel-L2 %.3e  max-abs %.3e\n", short_name(dir).c_str(), p, d.rel_l2,
                  d.max_abs);
      EXPECT_LT(d.rel_l2, kRelTol);
    }

    // Row by row (an MTP cache built incrementally) gives the same last row.
    auto s2 = m.new_sequence();
    std::vector<float> one(V);
    for (int64_t t = 0; t < T; ++t)
      m.forward_mtp({{s2.get(), next.data() + t, hidden.data() + t * H, 1, one.data(), false}});
    EXPECT_LT(compare(one.data(), last.data(), V).rel_l2, kRelTol);
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
