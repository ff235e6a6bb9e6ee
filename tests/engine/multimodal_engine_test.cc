// The engine with images, on tests/fixtures/multimodal (mm-s1, mm-s1-small): every
// golden prompt (one image, two images, text only) through Engine::generate with
// greedy sampling equals the golden greedy tokens, one at a time, all at once in one
// batch (image and text-only sequences mixed), and with small prefill chunks that
// split image token runs. Also the errors: a wrong placeholder count, images for a
// model loaded text only.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "util/error.h"
#include "vision/image_decode.h"
#include "vision/preprocess.h"

namespace qinfer::engine {
namespace {

std::string mm_dir(const std::string& name) { return std::string(QINFER_FIXTURES_DIR) + "/multimodal/" + name; }

struct GoldenPrompt {
  std::vector<int> ids;     // one image token per image
  GenParams params;
  std::vector<int> greedy;
  int64_t expanded_len = 0;
};

std::vector<GoldenPrompt> golden_prompts(const std::string& dir) {
  std::ifstream f(dir + "/golden.json");
  const auto g = nlohmann::json::parse(f);
  const vision::ProcessorConfig pc = vision::load_processor_config(dir);
  std::vector<GoldenPrompt> out;
  for (const auto& p : g["prompts"]) {
    GoldenPrompt gp;
    gp.ids = p["input_ids"].get<std::vector<int>>();
    gp.greedy = p["greedy_tokens"].get<std::vector<int>>();
    gp.expanded_len = p["length"].get<int64_t>();
    gp.params.temperature = 0;
    gp.params.ignore_eos = true;
    gp.params.max_tokens = static_cast<int64_t>(gp.greedy.size());
    auto imgs = std::make_shared<std::vector<vision::ImagePatches>>();
    for (const auto& file : p["image_files"])
      imgs->push_back(vision::preprocess_image(vision::load_image_file(dir + "/" + file.get<std::string>()), pc));
    if (!imgs->empty()) gp.params.images = imgs;
    out.push_back(std::move(gp));
  }
  return out;
}

class MultimodalEngine : public ::testing::TestWithParam<std::string> {};

TEST_P(MultimodalEngine, GreedyOneAtATimeEqualsGolden) {
  const std::string dir = mm_dir(GetParam());
  EngineOptions o;
  auto e = Engine::load(dir, o);
  for (const auto& gp : golden_prompts(dir)) {
    auto r = e->generate(gp.ids, gp.params);
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.tokens, gp.greedy);
    EXPECT_EQ(r.prompt_tokens, gp.expanded_len);   // usage counts the expanded prompt
  }
}

TEST_P(MultimodalEngine, BatchedAndChunkedEqualsGolden) {
  const std::string dir = mm_dir(GetParam());
  EngineOptions o;
  o.prefill_chunk = 5;   // splits every image's token run over several steps
  auto e = Engine::load(dir, o);
  auto prompts = golden_prompts(dir);
  ASSERT_GE(prompts.size(), 3u);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int rep = 0; rep < 2; ++rep)
    for (const auto& gp : prompts) streams.push_back(e->submit(gp.ids, gp.params));
  for (size_t i = 0; i < streams.size(); ++i) {
    const auto& gp = prompts[i % prompts.size()];
    std::vector<int> got;
    GenEvent ev;
    int64_t prompt_tokens = 0;
    while (true) {
      if (!streams[i]->take(ev, 0.5)) continue;
      for (const auto& t : ev.tokens) got.push_back(t.token);
      prompt_tokens = ev.prompt_tokens;
      if (ev.finished) break;
    }
    EXPECT_EQ(ev.error, "") << "request " << i;
    EXPECT_EQ(got, gp.greedy) << "request " << i;
    EXPECT_EQ(prompt_tokens, gp.expanded_len) << "request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MultimodalEngine, ::testing::Values("mm-s1", "mm-s1-small"),
                         [](const auto& i) {
                           std::string n = i.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

TEST(MultimodalEngineErrors, PlaceholderCountAndTextOnlyModel) {
  const std::string dir = mm_dir("mm-s1-small");
  auto prompts = golden_prompts(dir);
  const GoldenPrompt* one = nullptr;
  for (const auto& gp : prompts)
    if (gp.params.images && gp.params.images->size() == 1) one = &gp;
  ASSERT_NE(one, nullptr);
  {
    EngineOptions o;
    auto e = Engine::load(dir, o);
    GenParams two = one->params;
    auto imgs = std::make_shared<std::vector<vision::ImagePatches>>(*one->params.images);
    imgs->push_back(imgs->front());
    two.images = imgs;   // two images, one placeholder
    EXPECT_THROW(e->submit(one->ids, two), Error);
    GenParams none = one->params;
    none.images.reset();   // a placeholder without an image
    try {
      e->submit(one->ids, none);
      ADD_FAILURE() << "no error";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("no image"), std::string::npos) << err.what();
    }
  }
  EngineOptions o;
  o.load.load_vision = false;
  auto e = Engine::load(dir, o);
  try {
    e->submit(one->ids, one->params);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("limit-mm-per-prompt"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace qinfer::engine
