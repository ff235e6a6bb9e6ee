// --dense bf16c: the dense BF16 matrices re-encoded in the lossless 12-bit form
// (ops/bf16c.h) give the very logits of the plain model, bit for bit, on every
// kernel path: prefill (panels and scratch tiles), one-token decode steps and a
// speculative-verify-sized step of 3 tokens. The one-row BF16 kernel is forced to
// widen (rows one after another), the order the 12-bit kernels sum in; the plain
// model itself is held to the golden logits by golden_test.cc.
#include <gtest/gtest.h>

#include "golden.h"
#include "ops/matmul.h"

namespace qinfer::test {
namespace {

class DenseBf16cGolden : public ::testing::TestWithParam<std::string> {};

// Logits of a prefill then decode steps of 1 and 3 tokens, one sequence.
std::vector<std::vector<float>> steps(Model& m, const std::vector<int>& ids) {
  std::vector<std::vector<float>> out;
  auto s = m.new_sequence();
  out.push_back(run(m, *s, ids, true));
  for (int t = 0; t < 3; ++t) out.push_back(run(m, *s, {(t * 37 + 11) % 500}, true));
  out.push_back(run(m, *s, {7, 99, 301}, true));
  return out;
}

TEST_P(DenseBf16cGolden, LogitsEqualThePlainModel) {
  const std::string dir = GetParam();
  LoadOptions o;
  o.threads = 2;
  o.dense_bf16c = 1;
  auto m = Model::load(dir, o);
  Model& ref = cached_model(dir);
  ASSERT_TRUE(m->dense_bf16c());
  EXPECT_FALSE(ref.dense_bf16c());   // auto: the fixtures are too small to probe for
  EXPECT_LT(m->weight_bytes(), ref.weight_bytes());
  Golden g(dir);
  for (const std::string& path : kernel_paths()) {
    KernelConfigGuard guard({path, ops::Bf16Kernel::kWiden});
    for (int p = 0; p < g.num_prompts(); ++p) {
      const std::vector<int> ids = g.i32("p" + std::to_string(p) + ".input_ids");
      const auto got = steps(*m, ids), want = steps(ref, ids);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k].size(), want[k].size());
        for (size_t i = 0; i < got[k].size(); ++i)
          ASSERT_EQ(got[k][i], want[k][i]) << short_name(dir) << " " << path << " prompt " << p << " step " << k
                                           << " logit " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DenseBf16cGolden, ::testing::ValuesIn(fixture_dirs()),
                         [](const auto& info) { return fixture_test_name(info.param); });

}  // namespace
}  // namespace qinfer::test
