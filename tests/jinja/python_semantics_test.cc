// Python behaviour the engine reproduces: repr/str of values, json.dumps, str methods.
#include <gtest/gtest.h>

#include "jinja/py_json.h"
#include "jinja/py_string.h"
#include "jinja/template.h"

using namespace qinfer::jinja;

namespace {
std::string render(const std::string& src, const Json& ctx = Json::object()) {
  return Template::parse(src, "t").render(ctx);
}
}  // namespace

TEST(PythonSemantics, StrRepr) {
  EXPECT_EQ(py::repr("a'b"), "\"a'b\"");
  EXPECT_EQ(py::repr("a'b\""), "'a\\'b\"'");
  EXPECT_EQ(py::repr("x\n\t\\"), "'x\\n\\t\\\\'");
  EXPECT_EQ(py::repr("\x01\x7f"), "'\\x01\\x7f'");
  EXPECT_EQ(py::repr("é\u00a0\u200b"), "'é\\xa0\\u200b'");
}

TEST(PythonSemantics, JsonDumps) {
  Json j = Json::parse(R"({"z": 1, "a": [1.5, true, null, "é😀\u0001"], "e": {}})");
  DumpOptions o;
  EXPECT_EQ(py_json_dumps(j, o), "{\"z\": 1, \"a\": [1.5, true, null, \"é😀\\u0001\"], \"e\": {}}");
  o.ensure_ascii = true;
  EXPECT_EQ(py_json_dumps(j, o), "{\"z\": 1, \"a\": [1.5, true, null, \"\\u00e9\\ud83d\\ude00\\u0001\"], \"e\": {}}");
  o = DumpOptions();
  o.sort_keys = true;
  o.indent = " ";
  o.item_sep = ",";
  EXPECT_EQ(py_json_dumps(Json::parse(R"({"b": [1], "a": 2})"), o), "{\n \"a\": 2,\n \"b\": [\n  1\n ]\n}");
}

TEST(PythonSemantics, StringMethods) {
  EXPECT_EQ(py::split("  a  b ", std::nullopt, -1), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(py::rsplit("a b c", std::nullopt, 1), (std::vector<std::string>{"a b", "c"}));
  EXPECT_EQ(py::split("a::b", std::string(":"), -1), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(py::strip("\u3000 x \u00a0", std::nullopt, true, true), "x");
  EXPECT_EQ(py::strip("<<x>>", std::string("<>"), true, false), "x>>");
  EXPECT_EQ(py::find("日本語テキスト", "テ", std::nullopt, std::nullopt, false), 3);
  EXPECT_EQ(py::count("aaaa", "aa", std::nullopt, std::nullopt), 2);
  EXPECT_EQ(py::replace("abc", "", "-", 2), "-a-bc");
  EXPECT_EQ(py::title("hello wORLD's"), "Hello World'S");
  EXPECT_EQ(py::length("héllo"), 5u);
}

TEST(PythonSemantics, InvalidUtf8SurvivesRoundTrip) {
  std::string bad = "a\xff" "b";
  EXPECT_EQ(py::encode(py::decode(bad)), bad);
  EXPECT_EQ(render("{{ s[::-1] }}", Json{{"s", "ab"}}), "ba");
}

TEST(PythonSemantics, DataIsReadInPlaceAndKeepsKeyOrder) {
  Json ctx = Json::parse(R"({"d": {"zeta": 1, "alpha": {"y": 2, "x": 3}}})");
  EXPECT_EQ(render("{{ d|tojson }}|{% for k in d %}{{ k }},{% endfor %}|{{ d.alpha }}", ctx),
            "{\"zeta\": 1, \"alpha\": {\"y\": 2, \"x\": 3}}|zeta,alpha,|{'y': 2, 'x': 3}");
}

TEST(PythonSemantics, StrftimeNow) {
  std::string year = render("{{ strftime_now('%Y') }}");
  ASSERT_EQ(year.size(), 4u);
  EXPECT_GE(std::stoi(year), 2024);
}

TEST(PythonSemantics, TemplateIsReusableAndMacrosDoNotLeakAcrossRenders) {
  Template t = Template::parse("{% macro m() %}{{ x }}{% endmacro %}{{ m() }}", "t");
  EXPECT_EQ(t.render(Json{{"x", 1}}), "1");
  EXPECT_EQ(t.render(Json{{"x", 2}}), "2");
}
