// Results are identical in every memory mode on the fixtures: the weights copied
// into the resident arena layer by layer, read through the mapping
// (--mmap-dense), and dense experts file-backed with a hot set that changes
// between calls (--experts mapped, a budget that holds only some experts).
// Logits must match bit for bit: the same bytes go through the same kernels.
#include <gtest/gtest.h>

#include <cstring>

#include "golden.h"
#include "model/expert_cache.h"

namespace qinfer::test {
namespace {

std::vector<float> logits_of(Model& m, const std::vector<std::vector<int>>& calls) {
  auto s = m.new_sequence();
  std::vector<float> all;
  for (const auto& ids : calls) {
    const std::vector<float> l = run(m, *s, ids);
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

void expect_same(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << what << ": logits differ";
}

class MemoryModes : public ::testing::TestWithParam<std::string> {};

TEST_P(MemoryModes, LogitsIdenticalInEveryMode) {
  const std::string dir = GetParam();
  Golden g(dir);
  const std::vector<int> ids = g.i32("p0.input_ids");
  // A prefill, then single-token calls (the hot set is re-chosen at calls 1, 2, 4, 8).
  std::vector<std::vector<int>> calls = {ids};
  for (int i = 0; i < 9; ++i) calls.push_back({ids[static_cast<size_t>(i) % ids.size()]});
  for (bool int8 : {false, true}) {
    LoadOptions o;
    o.threads = 2;
    o.dense_int8 = int8;
    auto base = Model::load(dir, o);
    const std::vector<float> want = logits_of(*base, calls);
    const std::string tag = short_name(dir) + (int8 ? " int8" : " bf16");
    o.resident_dense = false;
    auto mapped = Model::load(dir, o);
    expect_same(logits_of(*mapped, calls), want, tag + " --mmap-dense");
    if (int8 || dir.find("gptq") != std::string::npos) continue;   // only dense experts can be file-backed
    // File-backed experts: a budget that leaves room for about a third of them.
    o.resident_dense = true;
    o.experts = model::ExpertsPlacement::kFileBacked;
    auto probe = Model::load(dir, o);   // unlimited budget: every expert may be hot
    ASSERT_NE(probe->expert_cache(), nullptr);
    const double non_expert = probe->memory_plan().need - probe->memory_plan().experts_hot;
    const double all_hot = probe->memory_plan().experts_hot + probe->memory_plan().experts_cold;
    o.memory_budget = non_expert + all_hot / 3;
    auto fb = Model::load(dir, o);
    ASSERT_NE(fb->expert_cache(), nullptr);
    const int64_t slots = fb->expert_cache()->slots();
    EXPECT_GT(slots, 0);
    EXPECT_LT(slots, probe->expert_cache()->slots());
    expect_same(logits_of(*fb, calls), want, tag + " --experts mapped");
    EXPECT_GE(fb->expert_cache()->rebalances(), 4);
    EXPECT_EQ(fb->expert_cache()->hot_count(), slots) << "the hot set should be full after routing";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MemoryModes, ::testing::ValuesIn(fixture_dirs()),
                         [](const auto& info) { return fixture_test_name(info.param); });

}  // namespace
}  // namespace qinfer::test
