// config.json parsing: the real Qwen3.6-35B-A3B file, the fixtures, and missing
// or ill-typed keys named in the error.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
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

namespace qinfer {
namespace {

nlohmann::json tiny_config() {
  std::ifstream in(std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/bf16/config.json");
  return nlohmann::json::parse(in);
}

std::string config_error(const nlohmann::json& cfg) {
  try {
    parse_config(cfg, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Integers are range-checked as the JSON numbers they are; floats that would make every
// output NaN are refused at load.
TEST(Config, HostileNumbersAreRefused) {
  const auto j = tiny_config();
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {[](auto& c) { c["quantization_config"] = {{"quant_method", "gptq"}, {"group_size", 4294967328ull}}; },
       "quantization_config.group_size must be in [-1, 16777216], got 4294967328"},
      {[](auto& c) { c["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4294967300ull}}; },
       "quantization_config.bits"},
      {[](auto& c) { c["text_config"]["rope_parameters"]["mrope_section"] = {2147483647, 2147483647, 4}; },
       "mrope_section must hold integers in [0, 1048576]"},
      {[](auto& c) { c["text_config"]["rms_norm_eps"] = -1e-6; }, "text_config.rms_norm_eps must be in (0, 1)"},
      {[](auto& c) { c["text_config"]["rms_norm_eps"] = 0; }, "text_config.rms_norm_eps"},
      {[](auto& c) { c["text_config"]["rope_parameters"]["rope_theta"] = -10000; }, "rope_theta must be positive"},
      {[](auto& c) { c["text_config"]["rope_parameters"]["rope_theta"] = 0; }, "rope_theta must be positive"},
      {[](auto& c) { c["text_config"]["mtp_num_hidden_layers"] = 4294967297ull; }, "mtp_num_hidden_layers"},
      {[](auto& c) { c["text_config"]["bos_token_id"] = 18446744073709551615ull; }, "bos_token_id"},
      {[](auto& c) { c["text_config"]["eos_token_id"] = 4294967301ull; }, "eos_token_id must hold integers"},
      {[](auto& c) { c["image_token_id"] = int64_t{-5}; }, "image_token_id must be in [-1"},
      {[](auto& c) { c["text_config"]["max_position_embeddings"] = 9223372036854775807ll; }, "max_position_embeddings"},
      {[](auto& c) { c["text_config"]["full_attention_interval"] = 4294967300ull; c["text_config"].erase("layer_types"); },
       "full_attention_interval must be in [1"},
  };
  for (const auto& c : cases) {
    auto cfg = j;
    c.edit(cfg);
    std::string err = config_error(cfg);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "want \"" << c.expect << "\" in: " << err;
  }
}

nlohmann::json with_dynamic(const std::string& pattern) {
  auto c = tiny_config();
  c["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 32},
                              {"dynamic", {{"-:" + pattern, nlohmann::json::object()}}}};
  return c;
}

// std::regex recursed once per nested group (a stack overflow with thousands of groups) and
// backtracked without limit ((.*.*)*...X$ ran for minutes): PCRE2 with limits refuses both.
TEST(Config, DynamicRegexCannotCrashOrHang) {
  std::string nested = std::string(5000, '(') + "a" + std::string(5000, ')');
  std::string err = config_error(with_dynamic(nested));
  EXPECT_NE(err.find("bad regular expression"), std::string::npos) << err;
  EXPECT_NE(err.find("quantization_config.dynamic"), std::string::npos) << err;

  // Exponential backtracking that PCRE2's start-up optimisations cannot skip ('!' is present).
  ModelConfig c = parse_config(with_dynamic(R"((\w|\w)*!$)"), "config.json");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    c.quant.match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!x");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too much backtracking"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  // Ordinary anchored rules still behave like re.match.
  ModelConfig ok = parse_config(with_dynamic(R"(.*\.mlp\.gate$)"), "config.json");
  EXPECT_NE(ok.quant.match("model.layers.0.mlp.gate"), nullptr);
  EXPECT_EQ(ok.quant.match("model.layers.0.mlp.gate_proj"), nullptr);
  ModelConfig pre = parse_config(with_dynamic(R"(model\.visual)"), "config.json");
  EXPECT_NE(pre.quant.match("model.visual.blocks.0"), nullptr);
  EXPECT_EQ(pre.quant.match("x.model.visual"), nullptr);  // anchored at the start
}

TEST(Config, DeepNestingAndFifosInTheModelFolder) {
  std::string dir = testing::TempDir() + "/config_hostile";
  std::filesystem::create_directories(dir);
  std::string text = tiny_config().dump();
  text.insert(text.size() - 1, ", \"deep\": " + std::string(50000, '[') + std::string(50000, ']'));
  std::ofstream(dir + "/config.json") << text;
  try {
    load_config(dir);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/config.json: JSON nested deeper than 256 levels at deep"),
              std::string::npos) << e.what();
  }
  std::filesystem::remove(dir + "/config.json");
  ASSERT_EQ(::mkfifo((dir + "/config.json").c_str(), 0644), 0);
  try {
    load_config(dir);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qinfer
