#include "chat/tool_parser.h"
#include "tool_test_util.h"

#include <gtest/gtest.h>

#include "chat/reasoning_parser.h"

namespace qinfer::chat {
namespace {

using testing::call;
using testing::counter_ids;
using testing::param;

const char* kToolsJson = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "temp": {"type": "number"},
    "verbose": {"type": "boolean"}, "tags": {"type": "array"}, "opts": {"type": "object"},
    "units": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "maybe": {"type": ["string", "null"]},
    "nullable": {"type": "null"}, "when": {"type": "date"}}}}},
  {"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "noschema"}},
  {"type": "retrieval"}
])";

ToolSchemas tools() { return ToolSchemas(nlohmann::json::parse(kToolsJson)); }

ToolParseResult parse(std::string_view text) { return parse_tool_calls(text, tools(), counter_ids()); }

// Arguments JSON for a single get_weather parameter value.
std::string convert(std::string_view name, std::string_view value) {
  auto r = parse(call("get_weather", param(name, value)));
  if (r.tool_calls.size() != 1) return "<no call>";
  return r.tool_calls[0].arguments;
}

TEST(ToolParser, BasicCall) {
  auto r = parse(call("get_weather", param("city", "Paris") + param("days", "2")));
  EXPECT_EQ(r.content, std::nullopt);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].id, "id0");
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"city": "Paris", "days": 2})");
}

TEST(ToolParser, ContentBeforeAndSeveralCalls) {
  auto r = parse("Let me check.\n\n" + call("get_weather", param("city", "Paris")) + "\n" +
                 call("get_weather", param("city", "東京")));
  EXPECT_EQ(r.content, "Let me check.\n\n");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[1].id, "id1");
  EXPECT_EQ(r.tool_calls[1].arguments, R"({"city": "東京"})");
}

TEST(ToolParser, NoCalls) {
  EXPECT_EQ(parse("plain text").content, "plain text");
  EXPECT_EQ(parse("").content, "");
  auto r = parse("I write <tool_call> tags in prose");
  EXPECT_EQ(r.content, "I write <tool_call> tags in prose");
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(ToolParser, SchemaConversion) {
  EXPECT_EQ(convert("days", "2"), R"({"days": 2})");
  EXPECT_EQ(convert("days", " 1_000 "), R"({"days": 1000})");
  EXPECT_EQ(convert("days", "two"), R"({"days": "two"})");
  EXPECT_EQ(convert("days", "null"), R"({"days": null})");
  EXPECT_EQ(convert("temp", "2.0"), R"({"temp": 2})");
  EXPECT_EQ(convert("temp", "2.5"), R"({"temp": 2.5})");
  EXPECT_EQ(convert("temp", "1e20"), R"({"temp": 100000000000000000000})");
  EXPECT_EQ(convert("temp", "nan"), R"({"temp": "nan"})");
  EXPECT_EQ(convert("temp", "warm"), R"({"temp": "warm"})");
  EXPECT_EQ(convert("verbose", "True"), R"({"verbose": true})");
  EXPECT_EQ(convert("verbose", "yes"), R"({"verbose": false})");
  EXPECT_EQ(convert("tags", "[1, 2]"), R"({"tags": [1, 2]})");
  EXPECT_EQ(convert("tags", "['a', 'b']"), R"({"tags": ["a", "b"]})");
  EXPECT_EQ(convert("tags", "not a list"), R"({"tags": "not a list"})");
  EXPECT_EQ(convert("opts", R"({"k": 1, "n": null})"), R"({"opts": {"k": 1, "n": null}})");
  EXPECT_EQ(convert("opts", "{'k': 'v', 'b': True}"), R"({"opts": {"k": "v", "b": true}})");
  EXPECT_EQ(convert("opts", R"("{'k': 'v'}")"), R"({"opts": {"k": "v"}})");
  EXPECT_EQ(convert("city", "null"), R"({"city": "null"})");  // strings keep "null"
  EXPECT_EQ(convert("city", "  spaced  "), R"({"city": "  spaced  "})");
  EXPECT_EQ(convert("units", "null"), R"({"units": null})");   // anyOf with null
  EXPECT_EQ(convert("units", "None"), R"({"units": null})");
  EXPECT_EQ(convert("units", "metric"), R"({"units": "metric"})");
  EXPECT_EQ(convert("maybe", "123"), R"({"maybe": 123})");     // list type: literal_eval
  EXPECT_EQ(convert("maybe", "abc"), R"({"maybe": "abc"})");
  EXPECT_EQ(convert("nullable", "None"), R"({"nullable": null})");
  EXPECT_EQ(convert("when", "2024"), R"({"when": 2024})");     // unknown type: literal_eval
  EXPECT_EQ(convert("extra", "5"), R"({"extra": "5"})");       // not in the schema
  EXPECT_EQ(convert("city", "line1\nline2\t\"q\""), R"({"city": "line1\nline2\t\"q\""})");
}

TEST(ToolParser, ValuesVllmCannotConvertFailTheWholeParse) {
  const std::string text = "before " + call("get_weather", param("temp", "inf"));
  auto r = parse(text);
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, text);
  auto s = parse(call("get_weather", param("tags", "{1, 2}")));  // a set: json.dumps fails
  EXPECT_TRUE(s.tool_calls.empty());
}

TEST(ToolParser, NoSchemaOrUnknownToolKeepsStrings) {
  EXPECT_EQ(parse(call("noschema", param("x", "5"))).tool_calls.at(0).arguments, R"({"x": "5"})");
  EXPECT_EQ(parse(call("mystery", param("x", "[1]"))).tool_calls.at(0).arguments, R"({"x": "[1]"})");
  EXPECT_EQ(parse(call("noschema", "")).tool_calls.at(0).arguments, "{}");
}

TEST(ToolParser, MalformedXml) {
  // Missing </parameter>: the next structural parameter of the schema ends the value.
  auto a = parse("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n2\n"
                 "</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(a.tool_calls.at(0).arguments, R"({"city": "Paris", "days": 2})");
  // Missing </function>.
  auto b = parse("<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</tool_call>");
  EXPECT_EQ(b.tool_calls.at(0).arguments, R"({"days": 3})");
  // Missing </tool_call> and everything after the value (truncated output).
  auto c = parse("<tool_call>\n<function=get_weather>\n<parameter=city>\nPar");
  EXPECT_EQ(c.tool_calls.at(0).arguments, R"({"city": "Par"})");
  auto d = parse("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>");
  EXPECT_EQ(d.tool_calls.at(0).arguments, R"({"city": "Paris"})");
  // No newlines around the value.
  auto e = parse("<tool_call><function=get_weather><parameter=city>Paris</parameter></function></tool_call>");
  EXPECT_EQ(e.tool_calls.at(0).arguments, R"({"city": "Paris"})");
  // Later duplicates overwrite, keeping the first position.
  auto f = parse(call("get_weather", param("city", "A") + param("days", "1") + param("city", "B")));
  EXPECT_EQ(f.tool_calls.at(0).arguments, R"({"city": "B", "days": 1})");
}

TEST(ToolParser, RejectsTemplateSyntaxNames) {
  auto r = parse("Example: <tool_call>\n<function={{ name }}>\n</function>\n</tool_call>");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "Example: ");
  EXPECT_TRUE(parse("<tool_call>\n<function=get_w").tool_calls.empty());
  EXPECT_TRUE(parse("<tool_call>\n<function=>\n</function>\n</tool_call>").tool_calls.empty());
  EXPECT_TRUE(parse("<tool_call>\n<function=two words>\n</function>\n</tool_call>").tool_calls.empty());
}

TEST(ToolParser, LiteralTagsInsideValuesAreNotStructural) {
  const std::string nested = "<tool_call>\n<function=x>\n<parameter=y>\nz\n</parameter>\n</function>\n</tool_call>";
  const std::string value = "example:\n" + nested + "\nend";
  auto r = parse(call("write_file", param("path", "t.txt") + param("content", value)));
  ASSERT_EQ(r.tool_calls.size(), 1u);
  nlohmann::json args = nlohmann::json::parse(r.tool_calls[0].arguments);
  EXPECT_EQ(args["content"], value);
  EXPECT_EQ(args["path"], "t.txt");
  auto s = parse(call("write_file", param("content", "a </parameter> b </function> c")));
  EXPECT_EQ(nlohmann::json::parse(s.tool_calls.at(0).arguments)["content"], "a </parameter> b </function> c");
}

TEST(ToolParser, BareBlocksAndBareFunctions) {
  // A <tool_call> block without a function stays in the content.
  auto r = parse("see <tool_call>x</tool_call> then " + call("get_weather", param("city", "P")));
  EXPECT_EQ(r.content, "see <tool_call>x</tool_call> then ");
  EXPECT_EQ(r.tool_calls.size(), 1u);
  // vLLM's back-off: a <function=...> without <tool_call> is still a call.
  auto b = parse("Call <function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>");
  EXPECT_EQ(b.content, "Call ");
  ASSERT_EQ(b.tool_calls.size(), 1u);
  EXPECT_EQ(b.tool_calls[0].arguments, R"({"city": "Rome"})");
}

TEST(ToolParser, AfterReasoning) {
  const std::string c = call("get_weather", param("city", "Paris"));
  auto inside = split_reasoning("I need the weather.\n" + c);  // no </think>: implicit end
  EXPECT_EQ(inside.reasoning, "I need the weather.\n");
  auto r = parse(inside.content.value());
  EXPECT_EQ(r.content, std::nullopt);
  EXPECT_EQ(r.tool_calls.size(), 1u);
  auto after = split_reasoning("Thinking.\n</think>\n\n" + c);
  auto r2 = parse(after.content.value());
  EXPECT_EQ(r2.content, "\n\n");
  EXPECT_EQ(r2.tool_calls.size(), 1u);
}

TEST(ToolParser, DefaultIdsLookLikeVllm) {
  auto r = parse_tool_calls(call("noschema", ""), tools());
  ASSERT_EQ(r.tool_calls.size(), 1u);
  const std::string& id = r.tool_calls[0].id;
  ASSERT_EQ(id.size(), 14u + 16u);
  EXPECT_EQ(id.substr(0, 14), "chatcmpl-tool-");
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 14), std::string::npos);
  EXPECT_NE(make_tool_call_id(), make_tool_call_id());
}

TEST(ToolSchemas, AcceptsFlatFormAndIgnoresJunk) {
  ToolSchemas t(nlohmann::json::parse(
      R"([{"type": "function", "name": "flat", "parameters": {"properties": {"a": {"type": "integer"}}}},
          "junk", {"function": {"name": 5}}, {"function": {"name": "bad", "parameters": {"properties": []}}}])"));
  ASSERT_NE(t.properties("flat"), nullptr);
  EXPECT_EQ(t.properties("bad"), nullptr);
  EXPECT_EQ(t.properties("missing"), nullptr);
  EXPECT_EQ(ToolSchemas(nlohmann::json()).properties("x"), nullptr);
}

}  // namespace
}  // namespace qinfer::chat
