// chat/chat_format: the Qwen3.5 chat format's strings, read from the model folder where its
// files say them (the assets/ tokenizer folder is the real model's), defaults elsewhere.
#include "chat/chat_format.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chat/reasoning_parser.h"
#include "util/error.h"

namespace qinfer::chat {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name, const std::string& tokenizer_config) {
  const fs::path dir = fs::path(testing::TempDir()) / ("chat_format_" + name);
  fs::create_directories(dir);
  if (!tokenizer_config.empty()) std::ofstream(dir / "tokenizer_config.json") << tokenizer_config;
  return dir;
}

TEST(ChatFormat, TheModelFolderSaysTheTurnEndAndEndOfText) {
  const ChatFormat f = ChatFormat::load(std::string(QINFER_SOURCE_DIR) + "/assets/tokenizer/qwen3.5");
  EXPECT_EQ(f.turn_end, "<|im_end|>");
  EXPECT_EQ(f.end_of_text, "<|endoftext|>");
  EXPECT_EQ(f.stop_tokens(), (std::vector<std::string>{"<|im_end|>", "<|endoftext|>"}));
  EXPECT_EQ(f.think_end, "</think>");
}

TEST(ChatFormat, DefaultsWhereTheFolderSaysNothing) {
  const ChatFormat d;
  const ChatFormat none = ChatFormat::load(scratch("none", "").string());
  EXPECT_EQ(none.stop_tokens(), d.stop_tokens());
  const ChatFormat empty = ChatFormat::load(scratch("empty", R"({"eos_token": null})").string());
  EXPECT_EQ(empty.stop_tokens(), d.stop_tokens());
  const ChatFormat other =
      ChatFormat::load(scratch("other", R"({"eos_token": {"content": "</s>"}, "pad_token": "<pad>"})").string());
  EXPECT_EQ(other.stop_tokens(), (std::vector<std::string>{"</s>", "<pad>"}));
  EXPECT_THROW(ChatFormat::load(scratch("bad", R"({"eos_token": 3})").string()), Error);
}

TEST(ChatFormat, ForcedToolCallOpening) {
  const ChatFormat f;
  EXPECT_EQ(f.forced_tool_call(true, std::nullopt), "</think>\n\n<tool_call>\n<function=");
  EXPECT_EQ(f.forced_tool_call(false, std::nullopt), "<tool_call>\n<function=");
  EXPECT_EQ(f.forced_tool_call(true, "get_weather"), "</think>\n\n<tool_call>\n<function=get_weather>\n");
  // The forced text is what the parsers expect: it ends the reasoning of the prompt.
  EXPECT_TRUE(prompt_ends_reasoning("<think>\n" + f.forced_tool_call(true, "f")));
}

TEST(ChatFormat, WithoutTurnEnd) {
  const ChatFormat f;
  EXPECT_EQ(f.without_turn_end("<|im_start|>assistant\nHi<|im_end|>\n"), "<|im_start|>assistant\nHi");
  EXPECT_EQ(f.without_turn_end("Hi<|im_end|>"), "Hi");
  EXPECT_EQ(f.without_turn_end("Hi\n"), "Hi\n");
  EXPECT_EQ(f.without_turn_end("<|im_end|>\n<|im_end|>\n"), "<|im_end|>\n");
}

}  // namespace
}  // namespace qinfer::chat
