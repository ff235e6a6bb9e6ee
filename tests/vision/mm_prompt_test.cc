// get_rope_index against tests/fixtures/vision/rope/rope_cases.json, and the
// placeholder expansion.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "vision/mm_prompt.h"
#include "vision_test_util.h"

namespace qinfer::vision {
namespace {

TEST(RopeIndex, FixtureCases) {
  std::ifstream f(test::vision_fixtures() + "/rope/rope_cases.json");
  auto d = nlohmann::json::parse(f);
  const int image_id = d["special_tokens"]["image_token_id"];
  int checked = 0;
  for (const auto& c : d["cases"]) {
    if (c.contains("attention_mask")) continue;   // left-padded batches: the engine never pads
    std::vector<int> ids = c["input_ids"].get<std::vector<int>>();
    std::vector<ImageGrid> grids;
    for (const auto& g : c["image_grid_thw"]) grids.push_back({g[0], g[1], g[2]});
    MmPrompt p = rope_index(ids, grids, image_id, 2, c["name"].get<std::string>());
    const auto& pos = c["position_ids"];
    for (size_t i = 0; i < ids.size(); ++i)
      for (int k = 0; k < 3; ++k)
        ASSERT_EQ(p.positions[i * 3 + k], pos[k][i].get<int64_t>()) << c["name"] << " token " << i << " stream " << k;
    EXPECT_EQ(p.rope_delta, c["rope_delta"].get<int64_t>()) << c["name"];
    const auto& next = c["next_decode_positions"];
    for (size_t s = 0; s < next.size(); ++s)
      EXPECT_EQ(static_cast<int64_t>(ids.size() + s) + p.rope_delta, next[s][0].get<int64_t>());
    // The compact form (one pad per image) expands to the same prompt.
    std::vector<int> compact;
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] != image_id || i == 0 || ids[i - 1] != image_id) compact.push_back(ids[i]);
    {
      MmPrompt e = expand_image_prompt(compact, grids, image_id, 2);
      EXPECT_EQ(e.ids, ids) << c["name"];
      EXPECT_EQ(e.positions, p.positions);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST(RopeIndex, PlaceholderCountMismatchIsAnError) {
  try {
    expand_image_prompt({1, 5, 2}, {{1, 4, 4}, {1, 2, 2}}, 5, 2, "messages");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("messages: holds 1 image placeholder"), std::string::npos) << e.what();
  }
  MmPrompt p = expand_image_prompt({1, 5, 2}, {{1, 4, 6}}, 5, 2);
  EXPECT_EQ(p.ids.size(), 8u);
  EXPECT_EQ(p.image_ranges[0], std::make_pair(int64_t(1), int64_t(7)));
  EXPECT_EQ(p.rope_delta, 5 - 8);   // text 0, image w 1..3, text 4: max 4
}

}  // namespace
}  // namespace qinfer::vision
