#include <gtest/gtest.h>

#include <map>

#include "chat/reasoning_parser.h"
#include "chat/tool_parser.h"
#include "tool_test_util.h"

namespace qinfer::chat {
namespace {

using testing::call;
using testing::counter_ids;
using testing::param;

const char* kToolsJson = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "opts": {"type": "object"}, "temp": {"type": "number"}}}}},
  {"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}}}}}
])";

ToolSchemas tools() { return ToolSchemas(nlohmann::json::parse(kToolsJson)); }

// Everything a stream emitted, assembled per call index.
struct Streamed {
  std::string content;
  std::vector<std::string> ids, names, args;
  bool operator==(const Streamed&) const = default;
};

void absorb(Streamed& s, const ToolStreamDelta& d) {
  s.content += d.content;
  int last = -1;
  for (const auto& c : d.tool_calls) {
    EXPECT_GT(c.index, last) << "one fragment per index, in order";
    last = c.index;
    if (size_t(c.index) == s.args.size()) {
      EXPECT_FALSE(c.id.empty()) << "a call's first fragment carries its id";
      EXPECT_FALSE(c.name.empty());
      s.ids.push_back(c.id);
      s.names.push_back(c.name);
      s.args.push_back("");
    } else {
      ASSERT_LT(size_t(c.index), s.args.size());
      EXPECT_TRUE(c.id.empty() && c.name.empty()) << "id/name only once";
    }
    s.args[size_t(c.index)] += c.arguments;
  }
}

Streamed run(std::string_view text, const std::vector<size_t>& cuts) {
  ToolCallStream st(tools(), counter_ids());
  Streamed s;
  size_t prev = 0;
  for (size_t c : cuts) {
    absorb(s, st.push(text.substr(prev, c - prev)));
    prev = c;
  }
  absorb(s, st.push(text.substr(prev)));
  absorb(s, st.finish());
  return s;
}

// Cases where the stream must agree with the non-streaming parser on calls and on the
// content before the first call.
std::vector<std::string> cases() {
  return {
      call("get_weather", param("city", "Paris") + param("days", "2")),
      "Sure.\n\n" + call("get_weather", param("city", "Paris")) + "\n" + call("write_file", param("path", "a.txt")),
      call("get_weather", param("opts", "{'k': [1, 2]}")),
      // literal tags inside a value
      call("write_file", param("path", "x") + param("content",
           "code:\n<tool_call>\n<function=f>\n<parameter=p>\nv\n</parameter>\n</function>\n</tool_call>\nend")),
      call("write_file", param("content", "a </parameter> b <tool_ c")),
      // malformed: missing </parameter>, missing </function>, truncated, no newlines
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n2\n</parameter>\n"
      "</function>\n</tool_call>",
      "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</tool_call>",
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
      "<tool_call><function=get_weather><parameter=city>Paris</parameter></function></tool_call>",
      // duplicate parameter and an undeclared one
      call("get_weather", param("city", "A") + param("extra", "e") + param("days", "4")),
      // text that looks like a tag but is not
      "I like <tool_calls> and <tool_ and <function without tags",
      "Text only, no calls at all.",
      "",
  };
}

TEST(ToolCallStream, EverySplitAgreesWithNonStreaming) {
  for (const auto& text : cases()) {
    const auto ref = parse_tool_calls(text, tools(), counter_ids());
    const Streamed whole = run(text, {});
    ASSERT_EQ(whole.args.size(), ref.tool_calls.size()) << text;
    for (size_t i = 0; i < ref.tool_calls.size(); ++i) {
      EXPECT_EQ(whole.names[i], ref.tool_calls[i].name) << text;
      EXPECT_EQ(whole.args[i], ref.tool_calls[i].arguments) << text;
      EXPECT_EQ(whole.ids[i], "id" + std::to_string(i));
    }
    if (ref.tool_calls.empty()) {
      EXPECT_EQ(whole.content, text);
    } else {
      EXPECT_EQ(whole.content, ref.content.value_or("")) << text;
    }
    // Any two cut points (this covers every tag split at every position) give the same.
    for (size_t a = 0; a <= text.size(); ++a)
      for (size_t b = a; b <= text.size(); b += (text.size() > 120 ? 3 : 1))
        ASSERT_EQ(run(text, {a, b}), whole) << text << "\ncut at " << a << "," << b;
    // One character at a time.
    std::vector<size_t> every;
    for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
    ASSERT_EQ(run(text, every), whole) << text;
  }
}

// A value vLLM rejects (1e999 for a number: int(inf) overflows) after one that streamed: the
// block's final parse fails, and the stream closes what it sent however the text was split;
// the whole text used to close "{}" while a split one had already sent {"city": ...} (found
// by fuzz_tool_reasoning_parsers). The non-streaming parser drops the calls (tool_parser.h).
TEST(ToolCallStream, ALaterRejectedValueClosesWhatStreamedAtEverySplit) {
  const std::string text = call("get_weather", param("city", "Paris") + param("temp", "1e999"));
  const Streamed whole = run(text, {});
  ASSERT_EQ(whole.args.size(), 1u) << text;
  EXPECT_EQ(whole.args[0], R"({"city": "Paris"})");
  for (size_t a = 0; a <= text.size(); ++a) ASSERT_EQ(run(text, {a}), whole) << "cut at " << a;
  EXPECT_TRUE(parse_tool_calls(text, tools(), counter_ids()).tool_calls.empty());
}

TEST(ToolCallStream, IncrementalFragments) {
  ToolCallStream st(tools(), counter_ids());
  auto d = st.push("Let me check.<tool_");
  EXPECT_EQ(d.content, "Let me check.");
  d = st.push("call>\n<function=get_wea");
  EXPECT_TRUE(d.empty());
  d = st.push("ther>\n<parameter=city>\nParis\n</parameter>\n");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].id, "id0");
  EXPECT_EQ(d.tool_calls[0].name, "get_weather");
  EXPECT_EQ(d.tool_calls[0].arguments, "{");  // the value waits for a structural close
  d = st.push("<parameter=days>\n2\n</parameter>\n");
  EXPECT_EQ(d.tool_calls.at(0).arguments, R"("city": "Paris")");
  d = st.push("</function>\n");
  EXPECT_EQ(d.tool_calls.at(0).arguments, R"(, "days": 2)");
  d = st.push("</tool_call>");
  EXPECT_EQ(d.tool_calls.at(0).arguments, "}");
  d = st.push("\n");
  EXPECT_TRUE(d.empty());  // whitespace after a call is dropped
  d = st.finish();
  EXPECT_TRUE(d.empty());
  ASSERT_EQ(st.calls().size(), 1u);
  EXPECT_EQ(st.calls()[0].arguments, R"({"city": "Paris", "days": 2})");
}

TEST(ToolCallStream, SeveralCallsInOneDelta) {
  ToolCallStream st(tools(), counter_ids());
  auto d = st.push(call("get_weather", param("city", "A")) + "\n" + call("get_weather", param("city", "B")) +
                   "\nDone.");
  ASSERT_EQ(d.tool_calls.size(), 2u);
  EXPECT_EQ(d.tool_calls[0].arguments, R"({"city": "A"})");
  EXPECT_EQ(d.tool_calls[1].index, 1);
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"city": "B"})");
  EXPECT_EQ(d.content, "\nDone.");  // trailing text after the calls is streamed
}

TEST(ToolCallStream, RejectedNamesAndBareBlocks) {
  auto r = run("x <tool_call>\n<function={{name}}>\n</function>\n</tool_call>", {5, 20});
  EXPECT_TRUE(r.args.empty());
  EXPECT_EQ(r.content, "x ");
  auto b = run("see <tool_call>no function</tool_call> ok", {7, 16});
  EXPECT_TRUE(b.args.empty());
  EXPECT_EQ(b.content, "see <tool_call>no function</tool_call> ok");
  auto u = run("<tool_call> dangling", {3});
  EXPECT_EQ(u.content, "<tool_call> dangling");
}

TEST(ToolCallStream, DuplicateParameterStreamsValidJsonWithSameMeaning) {
  const std::string text = call("get_weather", param("city", "A") + param("days", "4") + param("city", "B"));
  const auto ref = parse_tool_calls(text, tools(), counter_ids());
  // Streamed piecewise, "A" is out before the duplicate shows up and cannot be taken back, so
  // every split (the whole block at once included) streams all values in text order; JSON
  // readers keep the last value, so the meaning is the non-streaming dict's.
  EXPECT_EQ(run(text, {}).args.at(0), R"({"city": "A", "days": 4, "city": "B"})");
  EXPECT_EQ(run(text, {text.size() - 30}).args.at(0), R"({"city": "A", "days": 4, "city": "B"})");
  for (size_t a = 0; a <= text.size(); ++a)
    EXPECT_EQ(nlohmann::json::parse(run(text, {a}).args.at(0)), nlohmann::json::parse(ref.tool_calls[0].arguments));
}

// The server's pipeline: reasoning stream first, its content into the tool stream.
TEST(ToolCallStream, BehindTheReasoningStreamEverySplit) {
  const std::string c = call("get_weather", param("city", "Paris"));
  for (const std::string& text : {"The user wants weather.\n</think>\n\n" + c, "Need data.\n" + c}) {
    const auto split = split_reasoning(text);
    const auto ref = parse_tool_calls(split.content.value_or(""), tools(), counter_ids());
    for (size_t a = 0; a <= text.size(); ++a) {
      ReasoningStream rs;
      ToolCallStream ts(tools(), counter_ids());
      Streamed s;
      std::string reasoning;
      auto feed = [&](const ReasoningStream::Delta& d) {
        reasoning += d.reasoning;
        absorb(s, ts.push(d.content));
      };
      feed(rs.push(std::string_view(text).substr(0, a)));
      feed(rs.push(std::string_view(text).substr(a)));
      feed(rs.finish());
      absorb(s, ts.finish());
      ASSERT_EQ(reasoning, split.reasoning.value_or("")) << a;
      ASSERT_EQ(s.content, ref.content.value_or("")) << a;
      ASSERT_EQ(s.args.size(), 1u) << a;
      ASSERT_EQ(s.args[0], ref.tool_calls[0].arguments) << a;
    }
  }
}

}  // namespace
}  // namespace qinfer::chat
