// Loading: BPE rules on small synthetic tokenizer.json files, and errors that name the file
// and field for missing or malformed input.
#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_stream.h"
#include "util/error.h"

namespace qinfer {
namespace {

using json = nlohmann::json;
using V = std::vector<int>;

// A byte-level BPE tokenizer.json: ids 0..255 are the bytes, then `extra` tokens in order.
json mini_tokenizer(const std::vector<std::string>& extra, const std::vector<std::string>& merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[tok::byte_level_encode(std::string(1, static_cast<char>(b)))] = b;
  for (size_t i = 0; i < extra.size(); ++i) vocab[tok::byte_level_encode(extra[i])] = 256 + static_cast<int>(i);
  json m = json::array();
  for (const auto& s : merges) m.push_back(s);
  return {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 300}, {"content", "<s>"}, {"special", true}},
                                    {{"id", 301}, {"content", "<tag>"}, {"special", false}}})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+| ?\\p{N}|\\s+|[^\\s\\p{L}\\p{N}]+"}}}, {"behavior", "Isolated"}, {"invert", false}},
                                       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"ignore_merges", false}, {"vocab", vocab}, {"merges", m}}}};
}

std::string load_error(const test::TempDir& dir) {
  try {
    Tokenizer::load(dir.path());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Loads `doc` as tokenizer.json and returns the error text.
std::string error_for(const json& doc) {
  test::TempDir dir("err");
  dir.write("tokenizer.json", doc.dump());
  return load_error(dir);
}

Tokenizer load_doc(const test::TempDir& dir, const json& doc) {
  dir.write("tokenizer.json", doc.dump());
  return Tokenizer::load(dir.path());
}

TEST(TokenizerLoad, MergeOrderAndTies) {
  test::TempDir dir("bpe");
  // ids: ab=256 bc=257 aa=258 abc=259
  const Tokenizer t = load_doc(dir, mini_tokenizer({"ab", "bc", "aa", "abc"}, {"a b", "b c", "a a", "ab c"}));
  EXPECT_EQ(t.encode("abc"), V{259});          // a b -> ab, then ab c -> abc
  EXPECT_EQ(t.encode("aaa"), (V{258, 'a'}));    // equal pairs: the leftmost merges first
  EXPECT_EQ(t.encode("aaaa"), (V{258, 258}));
  EXPECT_EQ(t.encode("xbc"), (V{'x', 257}));
  const Tokenizer r = load_doc(dir, mini_tokenizer({"ab", "bc"}, {"b c", "a b"}));
  EXPECT_EQ(r.encode("abc"), (V{'a', 257}));    // lower rank wins over position
  EXPECT_EQ(r.vocab_size(), 302);
  EXPECT_EQ(r.encode("a1 2"), (V{'a', '1', ' ', '2'}));  // the split pattern applies
}

TEST(TokenizerLoad, IgnoreMerges) {
  test::TempDir dir("ignore");
  json doc = mini_tokenizer({"abc"}, {});
  EXPECT_EQ(load_doc(dir, doc).encode("abc"), (V{'a', 'b', 'c'}));
  doc["model"]["ignore_merges"] = true;
  EXPECT_EQ(load_doc(dir, doc).encode("abc"), V{256});
}

TEST(TokenizerLoad, MergesAsPairsAndGpt2ByteLevel) {
  test::TempDir dir("pairs");
  json doc = mini_tokenizer({"ab"}, {});
  doc["model"]["merges"] = json::array({json::array({"a", "b"})});
  doc["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  const Tokenizer t = load_doc(dir, doc);
  EXPECT_EQ(t.encode("ab ab"), (V{256, ' ', 256}));
}

TEST(TokenizerLoad, AddedTokensAndConfig) {
  test::TempDir dir("added");
  dir.write("tokenizer_config.json",
            json{{"added_tokens_decoder", {{"300", {{"content", "<s>"}, {"special", true}}},
                                           {"305", {{"content", "<extra>"}, {"special", true}}}}}}.dump());
  const Tokenizer t = load_doc(dir, mini_tokenizer({}, {}));
  EXPECT_EQ(t.vocab_size(), 306);
  EXPECT_EQ(t.encode("<s>x<extra><tag>"), (V{300, 'x', 305, 301}));
  EXPECT_EQ(t.encode("<s><tag>", false), (V{'<', 's', '>', 301}));
  EXPECT_EQ(t.token_text(302), "");  // a hole in the id range
  EXPECT_THROW(t.decode({302}), Error);
  EXPECT_EQ(t.decode({300, 'x', 301}, true), "x<tag>");
}

TEST(TokenizerLoad, MissingFiles) {
  const std::string err = load_error(test::TempDir("empty"));
  EXPECT_NE(err.find("tokenizer.json"), std::string::npos) << err;
  EXPECT_NE(err.find("not found"), std::string::npos) << err;
  try {
    Tokenizer::load("/nonexistent/model/dir");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model/dir/tokenizer.json"), std::string::npos) << e.what();
  }
}

TEST(TokenizerLoad, MalformedJson) {
  test::TempDir dir("bad");
  const std::string good = mini_tokenizer({}, {}).dump();
  dir.write("tokenizer.json", good.substr(0, good.size() / 2));
  std::string err = load_error(dir);
  EXPECT_NE(err.find(dir.path() + "/tokenizer.json"), std::string::npos) << err;
  EXPECT_NE(err.find("malformed JSON"), std::string::npos) << err;
  dir.write("tokenizer.json", "");
  EXPECT_NE(load_error(dir).find("tokenizer.json"), std::string::npos);
  dir.write("tokenizer.json", "[1, 2]");
  EXPECT_NE(load_error(dir).find("top level"), std::string::npos);
}

TEST(TokenizerLoad, FieldErrorsNameTheField) {
  const json base = mini_tokenizer({"ab"}, {"a b"});
  struct Case {
    std::function<void(json&)> edit;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {[](json& d) { d.erase("model"); }, "missing field model"},
      {[](json& d) { d["model"].erase("vocab"); }, "missing field model.vocab"},
      {[](json& d) { d["model"]["vocab"] = "x"; }, "model.vocab is not an object"},
      {[](json& d) { d["model"]["vocab"]["a"] = "zero"; }, "model.vocab[\"a\"]"},
      {[](json& d) { d["model"]["vocab"]["a"] = -4; }, "model.vocab[\"a\"]"},
      {[](json& d) { d["model"].erase("merges"); }, "missing field model.merges"},
      {[](json& d) { d["model"]["merges"] = json::array({"a b", "a q"}); }, "model.merges[1]"},
      {[](json& d) { d["model"]["merges"] = json::array({"a b", "ab"}); }, "model.merges[1]"},
      {[](json& d) { d["model"]["merges"] = json::array({"a b", 7}); }, "model.merges[1]"},
      {[](json& d) { d["model"]["merges"] = json::array({"b a"}); }, "model.merges[0]"},  // "ba" not in vocab
      {[](json& d) { d["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"a"})}); }, "model.merges[1]"},
      {[](json& d) { d["model"]["merges"] = json::array({json::array({"a", 1})}); }, "model.merges[0]"},
      {[](json& d) { d["model"]["type"] = "WordPiece"; }, "model.type"},
      {[](json& d) { d["model"]["byte_fallback"] = true; }, "model.byte_fallback"},
      {[](json& d) { d["normalizer"] = {{"type", "NFKC"}}; }, "normalizer"},
      {[](json& d) { d["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed"; }, "pre_tokenizer"},
      {[](json& d) { d["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; }, "pre_tokenizer.pretokenizers[0].behavior"},
      {[](json& d) { d["pre_tokenizer"] = {{"type", "Whitespace"}}; }, "pre_tokenizer"},
      {[](json& d) { d["decoder"] = {{"type", "WordPiece"}}; }, "decoder"},
      {[](json& d) { d["model"]["vocab"].erase(tok::byte_level_encode("\x7F")); }, "no token for byte 127"},
      {[](json& d) { d["added_tokens"][1].erase("content"); }, "added_tokens[1].content"},
      {[](json& d) { d["added_tokens"][0]["id"] = "300"; }, "added_tokens[0].id"},
  };
  for (const Case& c : cases) {
    json doc = base;
    c.edit(doc);
    const std::string err = error_for(doc);
    EXPECT_NE(err.find("tokenizer.json"), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "want \"" << c.expect << "\" in: " << err;
  }
}

TEST(TokenizerLoad, JsonParser) {
  const std::string text =
      R"({"model": {"vocab": {"\u0120a": 1, "\ud83d\ude0a": 22, "q\"\\\/\t": 3}, "merges": ["a b", ["c", "d"]]},)"
      R"( "x": [1, -2.5e3, true, false, null, "\n", {}, [], 18446744073709551615]})";
  const tok::TokenizerJson tj = tok::parse_tokenizer_json(text, "t.json");
  ASSERT_TRUE(tj.vocab_streamed && tj.merges_streamed);
  ASSERT_EQ(tj.vocab.size(), 3u);
  EXPECT_EQ(tj.vocab[0], (std::pair<std::string, int64_t>{"\u0120a", 1}));
  EXPECT_EQ(tj.vocab[1].first, "😊");
  EXPECT_EQ(tj.vocab[2].first, "q\"\\/\t");
  EXPECT_EQ(tj.merges[1], (std::pair<std::string, std::string>{"c", "d"}));
  EXPECT_EQ(tj.doc["x"], json::parse(R"([1, -2.5e3, true, false, null, "\n", {}, [], 18446744073709551615])"));
  EXPECT_TRUE(tj.doc["model"]["vocab"].is_null());
  for (const char* bad : {"{", "{\"a\" 1}", "[1,]", "{\"a\": tru}", "\"\\ud800\"", "\"a\u0001\"", "01", "[1] 2", "{\"a\": \"\\x\"}"}) {
    try {
      tok::parse_tokenizer_json(bad, "t.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("t.json: malformed JSON at byte"), std::string::npos) << e.what();
    }
  }
}

TEST(TokenizerLoad, ConfigErrorsNameTheConfig) {
  test::TempDir dir("cfg");
  dir.write("tokenizer.json", mini_tokenizer({}, {}).dump());
  dir.write("tokenizer_config.json", "{\"added_tokens_decoder\": ");
  std::string err = load_error(dir);
  EXPECT_NE(err.find("tokenizer_config.json"), std::string::npos) << err;
  dir.write("tokenizer_config.json", json{{"added_tokens_decoder", {{"x1", {{"content", "<a>"}}}}}}.dump());
  err = load_error(dir);
  EXPECT_NE(err.find("added_tokens_decoder[\"x1\"]"), std::string::npos) << err;
  dir.write("tokenizer_config.json", json{{"added_tokens_decoder", {{"400", {{"special", true}}}}}}.dump());
  err = load_error(dir);
  EXPECT_NE(err.find("added_tokens_decoder[\"400\"].content"), std::string::npos) << err;
}

}  // namespace
}  // namespace qinfer

namespace qinfer {
namespace {

// Ids above INT_MAX used to wrap (4294967301 replaced token 5; 3000000000 indexed wild memory)
// and 999999999 allocated ~14 GB of per-id tables: every id is checked against the vocabulary.
TEST(TokenizerLoad, TokenIdsBoundedByTheVocabulary) {
  const json base = mini_tokenizer({"ab"}, {"a b"});
  for (int64_t bad : {int64_t{3000000000}, int64_t{4294967301}, int64_t{999999999}, int64_t{2147483647}}) {
    json doc = base;
    doc["model"]["vocab"]["ab"] = bad;
    std::string err = error_for(doc);
    EXPECT_NE(err.find("model.vocab[\"ab\"]: token id " + std::to_string(bad) + " is out of range"),
              std::string::npos) << err;
    doc = base;
    doc["added_tokens"][0]["id"] = bad;
    err = error_for(doc);
    EXPECT_NE(err.find("added_tokens[0].id"), std::string::npos) << err;
  }
  json doc = base;
  doc["added_tokens"][0]["id"] = uint64_t{18446744073709551615u};
  EXPECT_NE(error_for(doc).find("added_tokens[0].id"), std::string::npos);
  test::TempDir dir("cfgid");
  dir.write("tokenizer.json", base.dump());
  dir.write("tokenizer_config.json", json{{"added_tokens_decoder", {{"999999999", {{"content", "<a>"}}}}}}.dump());
  EXPECT_NE(load_error(dir).find("added_tokens_decoder[\"999999999\"]: token id"), std::string::npos) << load_error(dir);
  // A sparse but sane id is fine.
  dir.write("tokenizer_config.json", "{}");
  doc = base;
  doc["added_tokens"][0]["id"] = 5000;
  EXPECT_NO_THROW(load_doc(dir, doc));
}

TEST(TokenizerLoad, InvalidUtf8AndDeepNestingNameTheFile) {
  test::TempDir dir("utf8");
  std::string text = mini_tokenizer({}, {}).dump();
  const size_t at = text.find("\"BPE\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 5, "\"B\xff\xfe\"");
  dir.write("tokenizer.json", text);
  std::string err = load_error(dir);
  EXPECT_NE(err.find(dir.path() + "/tokenizer.json: malformed JSON at byte"), std::string::npos) << err;
  EXPECT_NE(err.find("invalid UTF-8"), std::string::npos) << err;
  text = mini_tokenizer({}, {}).dump();
  text.insert(text.size() - 1, ", \"deep\": " + std::string(100000, '[') + std::string(100000, ']'));
  dir.write("tokenizer.json", text);
  err = load_error(dir);
  EXPECT_NE(err.find("nesting too deep"), std::string::npos) << err;
  dir.write("tokenizer.json", mini_tokenizer({}, {}).dump());
  dir.write("tokenizer_config.json", "{\"x\": " + std::string(1000, '[') + std::string(1000, ']') + "}");
  err = load_error(dir);
  EXPECT_NE(err.find("tokenizer_config.json: JSON nested deeper than 256 levels at x"), std::string::npos) << err;
}

}  // namespace
}  // namespace qinfer
