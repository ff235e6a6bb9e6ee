// config.json parsing: the real Qwen3.6-35B-A3B file, the fixtures, and missing
// or ill-typed keys named in the error.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "io/config.h"
#include "util/error.h"

namespace qinfer {
namespace {

nlohmann::json read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read test data file " + path);
  return nlohmann::json::parse(in);
}

TEST(Config, RealQwen36File) {
  auto j = read(std::string(QINFER_SOURCE_DIR) + "/tests/data/model/qwen3.6-35b-a3b/config.json");
  ModelConfig c = parse_config(j, "config.json");
  EXPECT_EQ(c.text.hidden_size, 2048);
  EXPECT_EQ(c.text.num_hidden_layers, 40);
  EXPECT_EQ(c.text.num_full_layers(), 10);
  EXPECT_EQ(c.text.layer_types[3], LayerType::kFullAttention);
  EXPECT_EQ(c.text.layer_types[4], LayerType::kLinearAttention);
  EXPECT_EQ(c.text.num_experts, 256);
  EXPECT_EQ(c.text.num_experts_per_tok, 8);
  EXPECT_EQ(c.text.vocab_size, 248320);
  EXPECT_EQ(c.text.rotary_dim(), 64);
  EXPECT_EQ(c.text.rope.theta, 1e7);
  EXPECT_EQ(c.text.rope.mrope_section, (std::vector<int>{11, 11, 10}));
  EXPECT_EQ(c.text.max_position_embeddings, 262144);
  EXPECT_FALSE(c.quant.enabled);
  EXPECT_TRUE(c.has_vision);
}

TEST(Config, GptqFixtureDynamicRules) {
  ModelConfig c = load_config(std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/gptq");
  ASSERT_TRUE(c.quant.enabled);
  EXPECT_EQ(c.quant.group_size, 32);
  EXPECT_TRUE(c.quant.sym);
  EXPECT_FALSE(c.quant.v2_zeros);
  const auto* r = c.quant.match("model.language_model.layers.0.self_attn.q_proj");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->skip);
  EXPECT_EQ(c.quant.match("model.language_model.layers.0.mlp.experts.3.up_proj"), nullptr);
  EXPECT_NE(c.quant.match("model.language_model.layers.0.mlp.gate"), nullptr);
  EXPECT_EQ(c.quant.match("model.language_model.layers.0.mlp.gate_proj_x"), nullptr);  // "gate$" anchored
}

TEST(Config, MissingAndBadKeysAreNamed) {
  auto j = read(std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/bf16/config.json");
  auto expect_error = [](const nlohmann::json& cfg, const std::string& needle) {
    try {
      parse_config(cfg, "config.json");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
    }
  };
  auto a = j; a["text_config"].erase("hidden_size");
  expect_error(a, "text_config.hidden_size is missing");
  auto b = j; b["text_config"]["num_experts"] = "many";
  expect_error(b, "text_config.num_experts must be an integer");
  auto c = j; c["model_type"] = "llama";
  expect_error(c, "model_type 'llama'");
  auto d = j; d["text_config"]["layer_types"].erase(0);
  expect_error(d, "layer_types");
  auto e = j; e["text_config"]["rope_parameters"]["mrope_section"] = {1, 1, 1};
  expect_error(e, "mrope_section sums to 3");
  auto f = j; f["quantization_config"] = {{"quant_method", "awq"}};
  expect_error(f, "quantization_config.quant_method");
}

}  // namespace
}  // namespace qinfer
