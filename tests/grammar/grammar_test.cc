// Accept/reject tests of the grammar engine: regex, JSON Schema, choice, GBNF and tool-call
// grammars against strings, and token masks against a brute-force check on a small vocabulary
// and on the real Qwen3.5 vocabulary.
#include <gtest/gtest.h>

#include <random>

#include "grammar/compiler.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace qinfer::grammar {
namespace {

std::shared_ptr<const TokenVocab> tiny_vocab() {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.push_back(std::string(1, char(b)));
  for (const char* s : {"{\"", "\":", "\": ", ", \"", "true", "false", "null", "na", "name", "\"}", "}", "12", "0.",
                        "abc", "<|eos|>", "\u00e9t\u00e9", "\xc3", "<parameter=", ">\n", "\n</parameter>\n"}) {
    t.push_back(s);
  }
  std::vector<bool> excluded(t.size(), false);
  excluded[256 + 14] = true;  // <|eos|> is a special token
  return std::make_shared<const TokenVocab>(t, excluded);
}

std::shared_ptr<const Grammar> make(SpecKind kind, const std::string& text) {
  static auto vocab = tiny_vocab();
  return std::make_shared<const Grammar>(spec_tree({kind, text, "test"}), vocab);
}

void expect_match(const Grammar& g, std::initializer_list<const char*> yes, std::initializer_list<const char*> no) {
  for (const char* s : yes) EXPECT_TRUE(g.matches(s)) << "should match: " << s;
  for (const char* s : no) EXPECT_FALSE(g.matches(s)) << "should not match: " << s;
}

void expect_error(SpecKind kind, const std::string& text, const std::string& needle) {
  try {
    spec_tree({kind, text, "field.x"});
    FAIL() << "no error for " << text;
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("field.x"), std::string::npos) << e.what();
  }
}

TEST(Regex, Basics) {
  auto g = make(SpecKind::kRegex, R"(^(ab|cd)+[0-9]{2,3}\.x?$)");
  expect_match(*g, {"ab12.", "abcd123.x", "cdcd99.x"}, {"", "ab1.", "ab1234.", "ef12.", "ab12"});
  auto h = make(SpecKind::kRegex, R"([^a-c\d]\w*\s?)");
  expect_match(*h, {"d", "x_9 ", "\xc3\xa9t"}, {"a", "5", "dd  "});
  auto u = make(SpecKind::kRegex, "caf\u00e9|\\u00e8+");
  expect_match(*u, {"caf\u00e9", "\u00e8\u00e8"}, {"cafe", "\xc3"});
  auto dot = make(SpecKind::kRegex, "a.c");
  expect_match(*dot, {"abc", "a\u4e2dc"}, {"a\nc", "ac"});
}

TEST(Regex, UnsupportedIsAnError) {
  expect_error(SpecKind::kRegex, "(a)\\1", "backreference");
  expect_error(SpecKind::kRegex, "a(?=b)", "lookaround");
  expect_error(SpecKind::kRegex, "\\bword", "word boundary");
  expect_error(SpecKind::kRegex, "a{2000}", "above 1000");
  expect_error(SpecKind::kRegex, "(ab", "unbalanced");
  expect_error(SpecKind::kRegex, "[a-", "unterminated");
}

TEST(Choice, ExactStrings) {
  auto g = make(SpecKind::kChoice, R"(["yes", "no", "maybe so"])");
  expect_match(*g, {"yes", "no", "maybe so"}, {"ye", "yesno", "maybe"});
  expect_error(SpecKind::kChoice, "[1]", "list of strings");
}

TEST(JsonSchema, ObjectPropertiesRequired) {
  auto g = make(SpecKind::kJsonSchema, R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 5}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "ok": {"type": "boolean"}}, "required": ["name"]})");
  expect_match(*g,
               {R"({"name": "bob"})", R"({"name": "", "age": 150})", R"({"name": "a\"b", "age": 7, "ok": true})",
                R"({"name": "bob", "ok": false})"},
               {R"({"age": 3})", R"({"name": "bob", "age": 151})", R"({"name": "toolong"})", R"({"name": "b", "x": 1})",
                R"({"age": 3, "name": "b"})", R"({"name": "b",})", R"({"name": "b", "age": -1})", R"({"name": "b", "age": 01})"});
}

TEST(JsonSchema, IntegerRanges) {
  for (auto [lo, hi] : std::vector<std::pair<int, int>>{{-120, 75}, {0, 9}, {13, 1307}, {-50, -7}, {100, 100}}) {
    auto g = make(SpecKind::kJsonSchema,
                  "{\"type\": \"integer\", \"minimum\": " + std::to_string(lo) + ", \"maximum\": " + std::to_string(hi) + "}");
    for (int v = -1500; v <= 1500; ++v) {
      EXPECT_EQ(g->matches(std::to_string(v)), v >= lo && v <= hi) << v << " in [" << lo << ", " << hi << "]";
    }
  }
  auto ex = make(SpecKind::kJsonSchema, R"({"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 8})");
  expect_match(*ex, {"6", "7"}, {"5", "8", "6.0"});
  auto open = make(SpecKind::kJsonSchema, R"({"type": "integer", "minimum": 10})");
  expect_match(*open, {"10", "99", "123456789012345678"}, {"9", "-10", "0"});
}

TEST(JsonSchema, NumberBounds) {
  auto g = make(SpecKind::kJsonSchema, R"({"type": "number", "minimum": -2, "exclusiveMaximum": 3})");
  expect_match(*g, {"-2", "-1.5", "0", "2.999", "-0.25", "1"}, {"3", "3.0", "-2.1", "-3", "1e5", "4"});
  auto any = make(SpecKind::kJsonSchema, R"({"type": "number"})");
  expect_match(*any, {"0", "-1.25e+10", "3.5E3", "12"}, {"01", "1.", ".5", "+1", "1e"});
  expect_error(SpecKind::kJsonSchema, R"({"type": "number", "minimum": 0.5})", "non-integer");
}

TEST(JsonSchema, ArraysEnumsConstAnyOfRefs) {
  auto a = make(SpecKind::kJsonSchema, R"({"type": "array", "items": {"enum": ["a", 1, null]}, "minItems": 1, "maxItems": 3})");
  expect_match(*a, {R"(["a"])", R"([1, null, "a"])"}, {"[]", R"([1, 1, 1, 1])", R"(["b"])", R"([1,1])"});
  auto t = make(SpecKind::kJsonSchema, R"({"type": "array", "prefixItems": [{"type": "string", "maxLength": 2}, {"const": 5}]})");
  expect_match(*t, {R"(["ab", 5])", "[]", R"(["x"])"}, {R"(["ab", 6])", R"(["ab", 5, 5])"});
  auto u = make(SpecKind::kJsonSchema, R"({"anyOf": [{"type": "null"}, {"$ref": "#/$defs/p"}],
      "$defs": {"p": {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["x"]}}})");
  expect_match(*u, {"null", R"({"x": 3})"}, {R"({"x": 10})", "{}"});
  auto rec = make(SpecKind::kJsonSchema, R"({"$defs": {"n": {"type": "object", "properties": {
      "v": {"type": "integer", "minimum": 0, "maximum": 9}, "next": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}},
      "required": ["v", "next"]}}, "$ref": "#/$defs/n"})");
  expect_match(*rec, {R"({"v": 1, "next": null})", R"({"v": 1, "next": {"v": 2, "next": null}})"}, {R"({"v": 1})"});
}

TEST(JsonSchema, StringsFormatsPatterns) {
  auto d = make(SpecKind::kJsonSchema, R"({"type": "string", "format": "date"})");
  expect_match(*d, {R"("2024-02-28")", R"("2023-12-31")"}, {R"("2024-13-01")", R"("24-01-01")", R"("2024-02-30")", R"("2024-04-31")"});
  auto p = make(SpecKind::kJsonSchema, R"({"type": "string", "pattern": "^[A-Z]{2}-\\d+\"?$"})");
  expect_match(*p, {R"("AB-12")", R"("AB-1\"")"}, {R"("AB-12"")", R"("ab-1")"});
  auto s = make(SpecKind::kJsonSchema, R"({"type": "string", "minLength": 2, "maxLength": 3})");
  expect_match(*s, {R"("ab")", "\"\u00e9t\u00e9\"", R"("a\n")"}, {R"("a")", R"("abcd")", "\"a\nb\""});
}

TEST(JsonSchema, UnsupportedIsAnErrorNamingTheKeyword) {
  expect_error(SpecKind::kJsonSchema, R"({"type": "integer", "multipleOf": 3})", "multipleOf");
  expect_error(SpecKind::kJsonSchema, R"({"type": "array", "uniqueItems": true})", "uniqueItems");
  expect_error(SpecKind::kJsonSchema, R"({"not": {"type": "string"}})", "'not'");
  expect_error(SpecKind::kJsonSchema, R"({"type": "string", "format": "ipv9"})", "ipv9");
  expect_error(SpecKind::kJsonSchema, R"([1, 2])", "must be a JSON object");
  expect_error(SpecKind::kJsonSchema, R"({"$ref": "http://x/y"})", "outside this schema");
  expect_error(SpecKind::kJsonSchema, R"({"type": "strin"})", "unknown type");
  expect_error(SpecKind::kJsonSchema, R"j({"properties": {"a": {"type": "string", "pattern": "(?<=x)"}}})j", "lookaround");
}

TEST(JsonSchema, AnyJson) {
  auto g = make(SpecKind::kJsonObject, "");
  expect_match(*g, {"{}", R"({"a": [1, {"b": null}], "c": "x"})"}, {"[]", "1", R"({"a":1})", R"({"a": 1,})"});
}

TEST(Gbnf, RulesAndRecursion) {
  auto g = make(SpecKind::kGbnf, R"(
    # a tiny list language
    root ::= "[" items? "]"
    items ::= item ("," item)*
    item ::= [0-9]+ | root   # nested
  )");
  expect_match(*g, {"[]", "[1,22]", "[[1],[]]", "[[[[0]]]]"}, {"[", "[1,]", "[a]"});
  expect_error(SpecKind::kGbnf, "root ::= foo", "undefined rule 'foo'");
  expect_error(SpecKind::kGbnf, "start ::= \"a\"", "no 'root' rule");
  expect_error(SpecKind::kGbnf, "root ::= \"a", "unterminated");
}

TEST(Gbnf, JsonGrammarWithDeepRecursionCompiles) {
  // llama.cpp's json.gbnf shape: value -> object/array -> value; unrolled to a bounded depth
  // (retried shallower if the automaton would get too large).
  auto g = make(SpecKind::kGbnf, R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4})
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)");
  expect_match(*g, {R"({"a": [1, {"b": null}], "c": "x\n"})", "{}", R"({"k":[[[]]]})"}, {"[]", R"({"a":})", R"({"a" 1})"});
}

TEST(ToolCall, ParametersFitTheSchema) {
  const std::string tools = R"({"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
      "type": "object", "properties": {"city": {"type": "string", "maxLength": 8}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
      "required": ["city"]}}}, {"type": "function", "function": {"name": "noop"}}], "name": ""})";
  auto g = make(SpecKind::kToolCall, tools);
  expect_match(*g,
               {"get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
                "get_weather>\n<parameter=city>\nRome\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
                "noop>\n</function>\n</tool_call>"},
               {"get_weather>\n</function>\n</tool_call>",
                "get_weather>\n<parameter=city>\nRome\n</parameter>\n<parameter=days>\n9\n</parameter>\n</function>\n</tool_call>",
                "get_weather>\n<parameter=city>\nRo<me\n</parameter>\n</function>\n</tool_call>", "other>\n</function>\n</tool_call>"});
  auto named = make(SpecKind::kToolCall, R"({"tools": [{"type": "function", "function": {"name": "noop"}}], "name": "noop"})");
  expect_match(*named, {"</function>\n</tool_call>"}, {"noop>\n</function>\n</tool_call>"});
}

// The mask must be exactly the set of tokens whose bytes keep the grammar alive.
void check_masks(const Grammar& g, const TokenVocab& v, Matcher& m, std::string_view text, int eos) {
  std::string prefix;
  for (size_t step = 0; step <= text.size(); ++step) {
    const uint64_t* mask = m.mask(true);
    for (int id = 0; id < v.size(); ++id) {
      const bool bit = (mask[id >> 6] >> (id & 63)) & 1;
      bool want = v.usable(id) && g.is_prefix(prefix + v.bytes(id));
      if (id == eos) want = g.matches(prefix);
      ASSERT_EQ(bit, want) << "token " << id << " after '" << prefix << "'";
    }
    if (step == text.size()) break;
    // Advance by the single-byte token.
    ASSERT_TRUE(m.accept(uint8_t(text[step])));
    prefix += text[step];
  }
  EXPECT_TRUE(m.accepting());
}

TEST(Mask, EqualsBruteForceOnSmallVocab) {
  auto vocab = tiny_vocab();
  const int eos = 256 + 14;
  auto g = std::make_shared<const Grammar>(
      spec_tree({SpecKind::kJsonSchema,
                 R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 4}, "n": {"type": "integer"}}, "required": ["n"]})",
                 "t"}),
      vocab);
  Matcher m(g, {eos}, vocab->size());
  check_masks(*g, *vocab, m, "{\"name\": \"\xc3\xa9\", \"n\": 120}", eos);
  EXPECT_TRUE(m.terminated());
}

TEST(Mask, StartsAfterTheReasoningEnd) {
  auto vocab = tiny_vocab();
  auto g = std::make_shared<const Grammar>(spec_tree({SpecKind::kChoice, R"(["na"])", "t"}), vocab);
  Matcher m(g, {}, vocab->size(), /*start_after=*/'!');
  EXPECT_FALSE(m.active());
  EXPECT_TRUE(m.accept('x'));
  EXPECT_TRUE(m.accept('!'));
  EXPECT_TRUE(m.active());
  EXPECT_FALSE(m.accept('x'));
  EXPECT_TRUE(m.accept(256 + 7));  // "na"
  EXPECT_TRUE(m.terminated());
}

TEST(Compiler, CachesBySpec) {
  Compiler c(tiny_vocab(), 2);
  auto a = c.compile({SpecKind::kRegex, "a+", "r"});
  EXPECT_EQ(a, c.compile({SpecKind::kRegex, "a+", "r"}));
  EXPECT_NE(a, c.compile({SpecKind::kGbnf, "root ::= \"a\"+", "r"}));
  c.compile({SpecKind::kRegex, "b", "r"});
  c.compile({SpecKind::kRegex, "c", "r"});
  EXPECT_EQ(c.cache_size(), 2u);
}

TEST(Compiler, OversizedGrammarIsAnErrorNamingTheField) {
  Compiler c(tiny_vocab());
  try {
    c.compile({SpecKind::kJsonSchema,
               R"({"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 1000}})", "guided_json"});
    FAIL() << "no error";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("guided_json: grammar too large"), std::string::npos) << e.what();
  }
}

TEST(Mask, RealVocabularyRandomWalkStaysValid) {
  const std::string dir = std::string(QINFER_SOURCE_DIR) + "/assets/tokenizer/qwen3.5";
  Tokenizer tok = Tokenizer::load(dir);
  auto vocab = TokenVocab::from_tokenizer(tok);
  const std::string schema = R"({"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 999},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
      "kind": {"enum": ["a", "b"]}}, "required": ["id", "tags", "kind"]})";
  auto g = std::make_shared<const Grammar>(spec_tree({SpecKind::kJsonSchema, schema, "t"}), vocab);
  const int eos = *tok.token_id("<|im_end|>");
  std::mt19937 rng(7);
  for (int run = 0; run < 5; ++run) {
    Matcher m(g, {eos}, vocab->size());
    std::vector<int> ids;
    for (int step = 0; step < 200 && !m.terminated(); ++step) {
      const uint64_t* mask = m.mask(true);
      std::vector<int> allowed;
      for (int id = 0; id < vocab->size(); ++id)
        if ((mask[id >> 6] >> (id & 63)) & 1) allowed.push_back(id);
      ASSERT_FALSE(allowed.empty());
      const int t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      if (t == eos) break;
      ASSERT_TRUE(m.accept(t));
      ids.push_back(t);
    }
    const std::string text = tok.decode(ids);
    EXPECT_TRUE(g->matches(text)) << text;
    EXPECT_TRUE(m.accepting()) << text;
  }
}

}  // namespace
}  // namespace qinfer::grammar
