#include "chat/reasoning_parser.h"

#include <gtest/gtest.h>

namespace qinfer::chat {
namespace {

using Opt = std::optional<std::string>;

void expect_split(std::string_view text, Opt reasoning, Opt content, bool thinking = true) {
  auto r = split_reasoning(text, thinking);
  EXPECT_EQ(r.reasoning, reasoning) << "text: " << text;
  EXPECT_EQ(r.content, content) << "text: " << text;
}

TEST(ReasoningSplit, EndTagSplitsWithoutStripping) {
  expect_split("The user asks.\n</think>\n\nParis.", "The user asks.\n", "\n\nParis.");
  expect_split("</think>\n\nHi", "", "\n\nHi");  // empty reasoning is "" (not None) in vLLM
  expect_split("think</think>", "think", std::nullopt);
  expect_split("a</think>b</think>c", "a", "b</think>c");
}

TEST(ReasoningSplit, OpeningTagGeneratedByOldTemplatesIsDropped) {
  expect_split("<think>\nhmm\n</think>\n\nok", "\nhmm\n", "\n\nok");
  expect_split("junk<think>x</think>y", "x", "y");
}

TEST(ReasoningSplit, MissingEndTagMeansTruncatedThinking) {
  expect_split("still thinking about it", "still thinking about it", std::nullopt);
  expect_split("", "", std::nullopt);
}

TEST(ReasoningSplit, ThinkingDisabledIsAllContent) {
  expect_split("Just the answer.", std::nullopt, "Just the answer.", false);
  // An explicit </think> still splits (vLLM checks it first).
  expect_split("x</think>y", "x", "y", false);
}

TEST(ReasoningSplit, ToolCallInsideThinkingEndsReasoning) {
  expect_split("I should call it.\n<tool_call>\n<function=get_weather>\n</function>\n</tool_call>",
               "I should call it.\n", "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>");
  expect_split("<tool_call> <function name=\"x\">", std::nullopt, "<tool_call> <function name=\"x\">");
  // A mention of <tool_call> not followed by a function is just reasoning.
  expect_split("use <tool_call> tags", "use <tool_call> tags", std::nullopt);
  expect_split("<tool_call><functionx", "<tool_call><functionx", std::nullopt);
  // Only the first <tool_call> counts.
  expect_split("a <tool_call> b <tool_call>\n<function=f>", "a <tool_call> b <tool_call>\n<function=f>",
               std::nullopt);
  // </think> wins over an earlier tool call.
  expect_split("r<tool_call>\n<function=f></think>c", "r<tool_call>\n<function=f>", "c");
}

TEST(PromptEndsReasoning, TemplateEndings) {
  EXPECT_FALSE(prompt_ends_reasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(prompt_ends_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_ends_reasoning("<|im_start|>user\nhi<|im_end|>\n"));
  // Paired tool calls in the system prompt's instructions do not count.
  EXPECT_FALSE(prompt_ends_reasoning(
      "<tool_call>\n<function=example>\n</function>\n</tool_call><|im_start|>assistant\n<think>\n"));
  // A prefilled, unclosed tool call does.
  EXPECT_TRUE(prompt_ends_reasoning("<|im_start|>assistant\n<think>\nok\n<tool_call>\n<function=f>\n"));
  EXPECT_FALSE(prompt_ends_reasoning("<think>\nI like <tool_call> tags"));
}

// Feeds text cut at the given offsets and returns the concatenated stream.
ReasoningStream::Delta stream(std::string_view text, const std::vector<size_t>& cuts, bool ended = false) {
  ReasoningStream s(ended);
  ReasoningStream::Delta all;
  size_t prev = 0;
  auto add = [&](const ReasoningStream::Delta& d) {
    all.reasoning += d.reasoning;
    all.content += d.content;
  };
  for (size_t c : cuts) {
    add(s.push(text.substr(prev, c - prev)));
    prev = c;
  }
  add(s.push(text.substr(prev)));
  add(s.finish());
  return all;
}

const std::vector<std::string> kStreamCases = {
    "The user asks.\n</think>\n\nParis.",
    "</think>\n\nHi",
    "<think>\nhmm\n</think>\n\nok",
    "still thinking <thi and </thin and <tool_ but never closing",
    "I should call it.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "</function>\n</tool_call>",
    "use <tool_call> tags then </think>done",
    "<tool_call>\n\n  <function name=\"x\">",
    "<tool_call>\n<functio",
    "<tool_call> <functionx and more",
    "a</think>b</think>c",
    "r<tool_call>\n<function=f></think>c",  // documented divergence, checked separately
    "<thin",
    "",
};

TEST(ReasoningStream, EverySplitMatchesNonStreaming) {
  for (const auto& text : kStreamCases) {
    if (text == "r<tool_call>\n<function=f></think>c") continue;
    const auto ref = split_reasoning(text);
    for (size_t a = 0; a <= text.size(); ++a) {
      for (size_t b = a; b <= text.size(); ++b) {
        auto got = stream(text, {a, b});
        ASSERT_EQ(got.reasoning, ref.reasoning.value_or("")) << text << " cut " << a << "," << b;
        ASSERT_EQ(got.content, ref.content.value_or("")) << text << " cut " << a << "," << b;
      }
    }
  }
}

TEST(ReasoningStream, SplitEndTagIsHeldBack) {
  ReasoningStream s;
  auto d = s.push("abc</thi");
  EXPECT_EQ(d.reasoning, "abc");
  EXPECT_EQ(d.content, "");
  EXPECT_FALSE(s.reasoning_ended());
  d = s.push("nk>\n\nAnswer");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "\n\nAnswer");
  EXPECT_TRUE(s.reasoning_ended());
}

TEST(ReasoningStream, ToolCallIsBufferedUntilConfirmed) {
  ReasoningStream s;
  auto d = s.push("let me check<tool_call>");
  EXPECT_EQ(d.reasoning, "let me check");
  EXPECT_EQ(d.content, "");
  d = s.push("\n");
  EXPECT_TRUE(d.empty());
  d = s.push("<function=f>");
  EXPECT_EQ(d.content, "<tool_call>\n<function=f>");
  EXPECT_TRUE(s.reasoning_ended());
  ReasoningStream s2;
  s2.push("x<tool_call>");
  d = s2.push(" not a call");
  EXPECT_EQ(d.reasoning, "<tool_call> not a call");
}

TEST(ReasoningStream, LaterEndTagAfterImplicitEndStaysContent) {
  auto got = stream("r<tool_call>\n<function=f></think>c", {});
  EXPECT_EQ(got.reasoning, "r");
  EXPECT_EQ(got.content, "<tool_call>\n<function=f></think>c");
}

TEST(ReasoningStream, PromptEndedReasoningMakesEverythingContent) {
  auto got = stream("Answer with </think> inside", {3, 10}, true);
  EXPECT_EQ(got.reasoning, "");
  EXPECT_EQ(got.content, "Answer with </think> inside");
}

}  // namespace
}  // namespace qinfer::chat
