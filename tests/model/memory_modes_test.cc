// Results are identical in every memory mode on the fixtures: the weights copied
// into the resident arena layer by layer, read through the mapping
// (--mmap-dense), and routed experts file-backed with a hot set that changes
// between calls (--experts mapped, a budget that holds only some experts: dense
// ones are views into the mapping; GPTQ ones are repacked, hot ones into the pool,
// cold ones per call, so both hits and misses run through the repack).
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

// Routed experts file-backed with a hot budget of about a third of them.
std::unique_ptr<Model> load_third_hot(const std::string& dir, LoadOptions o) {
  o.experts = model::ExpertsPlacement::kFileBacked;
  o.memory_budget = 0;   // what the system has: every expert of a fixture may be hot
  auto probe = Model::load(dir, o);
  EXPECT_NE(probe->expert_cache(), nullptr);
  const double non_expert = probe->memory_plan().need - probe->memory_plan().experts_hot;
  const double all_hot = probe->memory_plan().experts_hot + probe->memory_plan().experts_cold;
  o.memory_budget = non_expert + all_hot / 3;
  auto fb = Model::load(dir, o);
  EXPECT_NE(fb->expert_cache(), nullptr);
  EXPECT_GT(fb->expert_cache()->slots(), 0);
  EXPECT_LT(fb->expert_cache()->slots(), probe->expert_cache()->slots());
  return fb;
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
    const bool gptq = short_name(dir).find("gptq") != std::string::npos;   // not the checkout's path
    if (int8 && !gptq) continue;   // int8 re-encodes dense experts: they are no longer views
    // File-backed experts: a budget that leaves room for about a third of them.
    o.resident_dense = true;
    auto fb = load_third_hot(dir, o);
    const int64_t slots = fb->expert_cache()->slots();
    expect_same(logits_of(*fb, calls), want, tag + " --experts mapped");
    EXPECT_GE(fb->expert_cache()->rebalances(), 4);
    EXPECT_EQ(fb->expert_cache()->hot_count(), slots) << "the hot set should be full after routing";
    const double share = fb->expert_cache()->hot_routed_share();
    EXPECT_GT(share, 0.0) << "some routed experts should be hot";
    EXPECT_LT(share, 1.0) << "some routed experts should be cold";
  }
}

// GPTQ experts file-backed: the hot set follows the routing. A second prompt routed
// differently moves it (repacks into freed slots), and the logits stay the resident ones.
TEST(MemoryModesGptq, HotSetMovesWithRouting) {
  const std::string dir = fixtures_dir() + "/qwen35moe-tiny-s1/gptq";
  Golden g(dir);
  const std::vector<int> ids = g.i32("p0.input_ids");
  LoadOptions o;
  o.threads = 2;
  auto base = Model::load(dir, o);
  const int64_t V = base->config().text.vocab_size;
  std::vector<std::vector<int>> first = {ids}, second;
  for (int i = 0; i < 9; ++i) first.push_back({ids[static_cast<size_t>(i) % ids.size()]});
  // Up to calls 16 and 32 (two rebalances), other tokens than the first prompt's.
  for (int i = 0; i < 30; ++i) second.push_back({static_cast<int>((V - 1 - 7 * i) % V)});
  auto fb = load_third_hot(dir, o);
  const model::ExpertCache& cache = *fb->expert_cache();
  auto hot_set = [&] {
    std::vector<int> hot;
    for (int l = 0; l < fb->config().text.num_hidden_layers; ++l)
      for (int e = 0; e < fb->config().text.num_experts; ++e)
        if (cache.is_hot(l, e)) hot.push_back(l * 1000 + e);
    return hot;
  };
  expect_same(logits_of(*fb, first), logits_of(*base, first), "first prompt");
  const std::vector<int> a = hot_set();
  EXPECT_EQ(static_cast<int64_t>(a.size()), cache.slots());
  expect_same(logits_of(*fb, second), logits_of(*base, second), "second prompt");
  const std::vector<int> b = hot_set();
  EXPECT_EQ(static_cast<int64_t>(b.size()), cache.slots());
  EXPECT_NE(a, b) << "the hot set should follow the second prompt's routing";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MemoryModes, ::testing::ValuesIn(fixture_dirs()),
                         [](const auto& info) { return fixture_test_name(info.param); });

}  // namespace
}  // namespace qinfer::test
