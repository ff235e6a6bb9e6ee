// ChatTemplate::load / apply: template discovery, special tokens, key order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "jinja/chat_template.h"
#include "util/error.h"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("qinfer_jinja_test_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
};

const std::string kShared = QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5";  // shipped in the repository

}  // namespace

TEST(ChatTemplate, LoadsShippedQwenDirectory) {
  auto ct = qinfer::ChatTemplate::load(kShared);
  EXPECT_EQ(ct.name(), "chat_template.jinja");
  EXPECT_EQ(ct.eos_token(), "<|im_end|>");
  EXPECT_EQ(ct.bos_token(), "");
  ordered_json msgs = ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
  EXPECT_EQ(ct.apply(msgs, nullptr, true, {{"enable_thinking", false}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, FallsBackToTokenizerConfig) {
  TempDir d;
  d.write("tokenizer_config.json",
          R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
              "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}"})");
  auto ct = qinfer::ChatTemplate::load(d.path.string());
  EXPECT_EQ(ct.bos_token(), "<s>");
  EXPECT_EQ(ct.apply(ordered_json::parse(R"([{"role":"user","content":"x"}])"), nullptr, false), "<s>[user]x</s>");
}

TEST(ChatTemplate, TemplateListTakesDefault) {
  TempDir d;
  d.write("tokenizer_config.json",
          R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D{{ add_generation_prompt }}"}]})");
  auto ct = qinfer::ChatTemplate::load(d.path.string());
  EXPECT_EQ(ct.apply(ordered_json::array(), nullptr, true), "DTrue");
}

TEST(ChatTemplate, ChatTemplateJinjaWinsOverConfig) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"chat_template": "config"})");
  d.write("chat_template.jinja", "file\n");
  EXPECT_EQ(qinfer::ChatTemplate::load(d.path.string()).apply(ordered_json::array(), nullptr, true), "file");
}

TEST(ChatTemplate, MissingOrBrokenInputsAreClearErrors) {
  TempDir d;
  try {
    qinfer::ChatTemplate::load(d.path.string());
    FAIL();
  } catch (const qinfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat_template"), std::string::npos);
  }
  d.write("tokenizer_config.json", "{not json");
  try {
    qinfer::ChatTemplate::load(d.path.string());
    FAIL();
  } catch (const qinfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos);
  }
  d.write("tokenizer_config.json", R"({"chat_template": [{"name": "x", "template": "y"}]})");
  EXPECT_THROW(qinfer::ChatTemplate::load(d.path.string()), qinfer::Error);
  d.write("chat_template.jinja", "{% for %}");
  EXPECT_THROW(qinfer::ChatTemplate::load(d.path.string()), qinfer::Error);
  auto ct = qinfer::ChatTemplate::from_string("x");
  EXPECT_THROW(ct.apply(ordered_json::object(), nullptr, true), qinfer::Error);
  EXPECT_THROW(ct.apply(ordered_json::array(), ordered_json::object(), true), qinfer::Error);
}

TEST(ChatTemplate, KwargsOverrideAndKeyOrder) {
  auto ct = qinfer::ChatTemplate::from_string("{{ tools[0]|tojson }}|{{ add_generation_prompt }}|{{ extra }}");
  ordered_json tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  EXPECT_EQ(ct.apply(ordered_json::array(), tools, true, {{"extra", 1}}),
            "{\"type\": \"function\", \"function\": {\"name\": \"f\"}}|True|1");
  // nlohmann::json sorts keys; the convenience overload shows that order.
  nlohmann::json sorted_tools = nlohmann::json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  EXPECT_EQ(ct.apply(nlohmann::json::array(), sorted_tools, false),
            "{\"function\": {\"name\": \"f\"}, \"type\": \"function\"}|False|");
}
