// smart_resize cases and the bit-exact resize / pixel_values of the vision fixtures.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vision_test_util.h"
#include "util/error.h"
#include "vision/preprocess.h"

namespace qinfer::vision {
namespace {

using test::read_raw;
using test::vision_fixtures;

TEST(SmartResize, FixtureCases) {
  std::ifstream f(vision_fixtures() + "/smart_resize_cases.json");
  auto cases = nlohmann::json::parse(f);
  ASSERT_GE(cases.size(), 10u);
  int errors = 0;
  for (const auto& c : cases) {
    const int64_t h = c["height"], w = c["width"];
    if (c.contains("error")) {
      ++errors;
      EXPECT_THROW(smart_resize(h, w, c["factor"], c["min_pixels"], c["max_pixels"]), Error) << c.dump();
      continue;
    }
    auto [rh, rw] = smart_resize(h, w, c["factor"], c["min_pixels"], c["max_pixels"]);
    EXPECT_EQ(rh, c["resized_height"].get<int64_t>()) << c["why"];
    EXPECT_EQ(rw, c["resized_width"].get<int64_t>()) << c["why"];
  }
  EXPECT_GE(errors, 1);
}

TEST(SmartResize, BankersRoundingAndAspectError) {
  EXPECT_EQ(smart_resize(720, 1280, 32, 65536, 16777216).first, 704);   // 22.5 -> 22
  try {
    smart_resize(10, 2500, 32, 65536, 16777216, "photo.png");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("photo.png: absolute aspect ratio must be smaller than 200"), std::string::npos);
  }
}

struct Case {
  const char* setting;
  const char* image;
  int64_t h, w;
};

class PreprocessFixture : public ::testing::TestWithParam<Case> {};

TEST_P(PreprocessFixture, BitExact) {
  const Case& c = GetParam();
  const std::string dir = vision_fixtures() + "/preprocess/" + c.setting;
  ProcessorConfig cfg = load_processor_config(dir);
  RgbImage img;
  img.height = std::string(c.image) == "img_a" ? 40 : 100;
  img.width = std::string(c.image) == "img_a" ? 56 : 70;
  img.rgb = read_raw<uint8_t>(vision_fixtures() + "/images/" + c.image + ".rgb_u8.bin");
  RgbImage r = resize_for_model(img, cfg);
  ASSERT_EQ(r.height, c.h);
  ASSERT_EQ(r.width, c.w);
  auto want_u8 = read_raw<uint8_t>(dir + "/" + c.image + ".resized_u8.bin");
  ASSERT_EQ(r.rgb.size(), want_u8.size());
  int bad = 0;
  for (size_t i = 0; i < want_u8.size(); ++i) bad += r.rgb[i] != want_u8[i];
  EXPECT_EQ(bad, 0);
  ImagePatches p = preprocess_image(img, cfg);
  EXPECT_EQ(p.grid_t, 1);
  EXPECT_EQ(p.grid_h, c.h / 16);
  EXPECT_EQ(p.grid_w, c.w / 16);
  auto want = read_raw<float>(dir + "/" + c.image + ".pixel_values.f32.bin");
  ASSERT_EQ(p.pixel_values.size(), want.size());
  EXPECT_EQ(std::memcmp(p.pixel_values.data(), want.data(), want.size() * 4), 0);
}

INSTANTIATE_TEST_SUITE_P(Vision, PreprocessFixture,
                         ::testing::Values(Case{"hf", "img_a", 224, 320}, Case{"hf", "img_b", 320, 224},
                                           Case{"small", "img_a", 32, 64}, Case{"small", "img_b", 96, 64}),
                         [](const auto& i) { return std::string(i.param.setting) + "_" + i.param.image; });

TEST(ProcessorConfig, DefaultsAndOverrides) {
  ProcessorConfig d = load_processor_config("/nonexistent-dir");
  EXPECT_EQ(d.min_pixels, 65536);
  EXPECT_EQ(d.max_pixels, 16777216);
  auto o = apply_processor_overrides(d, nlohmann::json{{"max_pixels", 1 << 20}}, "mm_processor_kwargs");
  EXPECT_EQ(o.max_pixels, 1 << 20);
  EXPECT_THROW(apply_processor_overrides(d, nlohmann::json{{"fps", 2}}, "mm_processor_kwargs"), Error);
  EXPECT_THROW(apply_processor_overrides(d, nlohmann::json{{"min_pixels", 1 << 25}}, "mm_processor_kwargs"), Error);
}

TEST(Resize, DownscaleOfFlatImageStaysFlat) {
  RgbImage img;
  img.height = 300;
  img.width = 500;
  img.rgb.assign(300 * 500 * 3, 77);
  RgbImage r = resize_bicubic_aa(img, 96, 160);
  for (uint8_t v : r.rgb) ASSERT_EQ(v, 77);
}

}  // namespace
}  // namespace qinfer::vision
