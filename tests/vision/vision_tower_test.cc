// The vision tower on tests/fixtures/vision/seed1 (3 blocks, hidden 64): the
// intermediates of the small run, the embeddings of both runs (<= 1e-4 abs), a
// batch equal to one image at a time, and strict weight validation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "vision_test_util.h"
#include "util/error.h"
#include "vision/vision_tower.h"

namespace qinfer::vision {
namespace {

using test::max_abs_diff;
using test::read_raw;
using test::vision_fixtures;

struct Seed {
  std::unique_ptr<SafetensorsFile> file;
  std::map<std::string, const TensorInfo*> tensors;
  VisionConfig cfg;
  std::unique_ptr<VisionTower> tower;
  explicit Seed(const std::string& dir) {
    file = std::make_unique<SafetensorsFile>(dir + "/vision.safetensors");
    for (const auto& t : file->tensors()) tensors[t.name] = &t;
    std::ifstream f(dir + "/vision_config.json");
    cfg = parse_vision_config(nlohmann::json::parse(f)["vision_config"], dir + "/vision_config.json");
    tower = VisionTower::load(cfg, tensors);
  }
};

ImagePatches patches_of(const std::string& setting, const std::string& image) {
  const std::string dir = vision_fixtures() + "/preprocess/" + setting;
  RgbImage img;
  img.height = image == "img_a" ? 40 : 100;
  img.width = image == "img_a" ? 56 : 70;
  img.rgb = read_raw<uint8_t>(vision_fixtures() + "/images/" + image + ".rgb_u8.bin");
  return preprocess_image(img, load_processor_config(dir));
}

TEST(VisionTower, LoadsTheSeedStrictly) {
  Seed s(vision_fixtures() + "/seed1");
  EXPECT_EQ(s.tower->tensor_count(), 45);
  // A missing tensor and a wrong shape name the tensor.
  auto t = s.tensors;
  t.erase("model.visual.blocks.1.attn.qkv.bias");
  try {
    VisionTower::load(s.cfg, t);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.visual.blocks.1.attn.qkv.bias"), std::string::npos) << e.what();
  }
  VisionConfig wrong = s.cfg;
  wrong.intermediate_size = 96;
  try {
    VisionTower::load(wrong, s.tensors);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mlp.linear_fc1.weight"), std::string::npos) << e.what();
  }
  // An unexpected tensor under the prefix (a deepstack merger) is refused.
  auto extra = s.tensors;
  extra["model.visual.deepstack_merger_list.0.norm.weight"] = s.tensors.at("model.visual.merger.norm.weight");
  EXPECT_THROW(VisionTower::load(s.cfg, extra), Error);
  VisionConfig deeper = s.cfg;
  deeper.depth = 4;
  EXPECT_THROW(VisionTower::load(deeper, s.tensors), Error);
}

TEST(VisionTower, SmallRunIntermediates) {
  Seed s(vision_fixtures() + "/seed1");
  const std::string d = vision_fixtures() + "/seed1/small/";
  ImagePatches a = patches_of("small", "img_a"), b = patches_of("small", "img_b");
  VisionTrace tr;
  std::vector<float> out = s.tower->forward({&a, &b}, &tr);
  struct Cmp { const char* file; const std::vector<float>* got; double tol; };
  std::vector<Cmp> cmps = {
      {"patch_embed", &tr.patch_embed, 1e-5}, {"pos_embed", &tr.pos_embed, 1e-6},
      {"embeddings", &tr.embeddings, 1e-5},   {"rope_cos", &tr.rope_cos, 1e-6},
      {"rope_sin", &tr.rope_sin, 1e-6},       {"block0.norm1", &tr.block0_norm1, 1e-5},
      {"block0.qkv", &tr.block0_qkv, 1e-5},   {"block0.q_rot", &tr.block0_q_rot, 1e-5},
      {"block0.k_rot", &tr.block0_k_rot, 1e-5}, {"block0.attn_core", &tr.block0_attn_core, 1e-5},
      {"block0.attn_out", &tr.block0_attn_out, 1e-5}, {"block0.mlp_out", &tr.block0_mlp_out, 1e-4},
      {"block0.out", &tr.block_out[0], 1e-4}, {"block1.out", &tr.block_out[1], 1e-4},
      {"block2.out", &tr.block_out[2], 1e-4}, {"last_hidden_state", &tr.last_hidden_state, 1e-4}};
  for (const Cmp& c : cmps) {
    auto want = read_raw<float>(d + c.file + ".f32.bin");
    ASSERT_EQ(c.got->size(), want.size()) << c.file;
    EXPECT_LE(max_abs_diff(*c.got, want), c.tol) << c.file;
  }
  auto ea = read_raw<float>(d + "image_embeds.img_a.f32.bin"), eb = read_raw<float>(d + "image_embeds.img_b.f32.bin");
  ASSERT_EQ(out.size(), ea.size() + eb.size());
  EXPECT_LE(max_abs_diff(std::vector<float>(out.begin(), out.begin() + ea.size()), ea), 1e-4);
  EXPECT_LE(max_abs_diff(std::vector<float>(out.begin() + ea.size(), out.end()), eb), 1e-4);
}

TEST(VisionTower, HfRunEmbeddingsAndBatchEqualsSingle) {
  Seed s(vision_fixtures() + "/seed1");
  const std::string d = vision_fixtures() + "/seed1/hf/";
  ImagePatches a = patches_of("hf", "img_a"), b = patches_of("hf", "img_b");
  VisionTrace tr;
  std::vector<float> out = s.tower->forward({&a, &b}, &tr);
  auto ea = read_raw<float>(d + "image_embeds.img_a.f32.bin"), eb = read_raw<float>(d + "image_embeds.img_b.f32.bin");
  ASSERT_EQ(out.size(), ea.size() + eb.size());
  std::vector<float> oa(out.begin(), out.begin() + ea.size()), ob(out.begin() + ea.size(), out.end());
  EXPECT_LE(max_abs_diff(oa, ea), 1e-4);
  EXPECT_LE(max_abs_diff(ob, eb), 1e-4);
  EXPECT_LE(max_abs_diff(tr.last_hidden_state, read_raw<float>(d + "last_hidden_state.f32.bin")), 1e-4);
  // One image at a time gives the same rows (attention never crosses images).
  EXPECT_LE(max_abs_diff(s.tower->forward({&a}), oa), 1e-5);
  EXPECT_LE(max_abs_diff(s.tower->forward({&b}), ob), 1e-5);
  EXPECT_EQ(out.size(), 140u * 64u);
}

TEST(VisionTower, BadPatchesAreErrors) {
  Seed s(vision_fixtures() + "/seed1");
  ImagePatches a = patches_of("small", "img_a");
  a.pixel_values.pop_back();
  EXPECT_THROW(s.tower->forward({&a}), Error);
}

}  // namespace
}  // namespace qinfer::vision
