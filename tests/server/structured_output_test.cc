// Request fields of structured outputs: which constraint a body asks for, and 400s that name
// the field for malformed or unsupported ones.
#include "server/structured_output.h"

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace qinfer::server {
namespace {

using json = nlohmann::ordered_json;

void expect_bad(const json& body, const std::string& param, const std::string& needle) {
  try {
    parse_structured_output(body);
    ADD_FAILURE() << "no error for " << body.dump();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(StructuredOutput, EveryFieldForm) {
  using K = grammar::SpecKind;
  EXPECT_FALSE(parse_structured_output(json::object()));
  EXPECT_FALSE(parse_structured_output(json::parse(R"({"response_format": {"type": "text"}})")));
  auto a = parse_structured_output(json::parse(R"({"response_format": {"type": "json_schema",
      "json_schema": {"name": "x", "strict": true, "schema": {"type": "object", "properties": {"b": {}, "a": {}}}}}})"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, K::kJsonSchema);
  EXPECT_EQ(a->field, "response_format.json_schema.schema");
  EXPECT_EQ(a->text, R"({"type":"object","properties":{"b":{},"a":{}}})");  // key order kept
  EXPECT_EQ(parse_structured_output(json::parse(R"({"response_format": {"type": "json_object"}})"))->kind, K::kJsonObject);
  EXPECT_EQ(parse_structured_output(json::parse(R"({"structured_outputs": {"regex": "a+"}})"))->kind, K::kRegex);
  EXPECT_EQ(parse_structured_output(json::parse(R"({"structured_outputs": {"choice": ["x"]}})"))->kind, K::kChoice);
  EXPECT_EQ(parse_structured_output(json::parse(R"({"structured_outputs": {"grammar": "root ::= \"a\""}})"))->kind, K::kGbnf);
  EXPECT_EQ(parse_structured_output(json::parse(R"({"structured_outputs": {"json_object": true}})"))->kind, K::kJsonObject);
  auto gj = parse_structured_output(json::parse(R"({"guided_json": "{\"type\": \"string\"}"})"));
  EXPECT_EQ(gj->kind, K::kJsonSchema);
  EXPECT_EQ(gj->text, R"({"type":"string"})");
  EXPECT_EQ(parse_structured_output(json::parse(R"({"guided_regex": "a"})"))->field, "guided_regex");
  EXPECT_EQ(parse_structured_output(json::parse(R"({"guided_choice": ["a", "b"]})"))->text, R"(["a","b"])");
  EXPECT_EQ(parse_structured_output(json::parse(R"({"guided_grammar": "root ::= \"a\""})"))->kind, K::kGbnf);
}

TEST(StructuredOutput, BadFieldsAre400s) {
  expect_bad(json::parse(R"({"response_format": {"type": "json_schema"}})"), "response_format.json_schema", "required");
  expect_bad(json::parse(R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})"),
             "response_format.json_schema.schema", "required");
  expect_bad(json::parse(R"({"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}})"),
             "response_format.json_schema.schema", "JSON object");
  expect_bad(json::parse(R"({"response_format": {"type": "structural_tag"}})"), "response_format.type", "structural_tag");
  expect_bad(json::parse(R"({"guided_json": "{not json"})"), "guided_json", "not valid JSON");
  expect_bad(json::parse(R"({"guided_choice": ["a", 1]})"), "guided_choice", "guided_choice[1]");
  expect_bad(json::parse(R"({"guided_regex": ""})"), "guided_regex", "empty");
  expect_bad(json::parse(R"({"structured_outputs": {"whitespace_pattern": " "}})"), "structured_outputs.whitespace_pattern", "not supported");
  expect_bad(json::parse(R"({"structured_outputs": {"bogus": 1}})"), "structured_outputs.bogus", "unknown");
  expect_bad(json::parse(R"({"guided_regex": "a", "response_format": {"type": "json_object"}})"), "guided_regex", "only one");
}

}  // namespace
}  // namespace qinfer::server
