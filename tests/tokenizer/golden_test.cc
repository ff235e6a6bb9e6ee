// Exact ids against every golden set we have, and decode(encode(x)) == NFC(x).
#include <gtest/gtest.h>

#include "test_util.h"

namespace qinfer {
namespace {

using test::qwen35;
using test::read_json;

std::string show(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += std::to_string(id) + " ";
  return s;
}

// 2,038 strings (tools/tokenizer_golden/gen_golden.mjs, ids from the Rust tokenizers crate).
TEST(TokenizerGolden, Corpus) {
  const auto doc = read_json(test::data_file("tokenizer/golden_corpus.json"));
  const auto& cases = doc.at("cases");
  ASSERT_GE(cases.size(), 2000u);
  int failures = 0;
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    const std::vector<int> want = c.at("ids");
    const std::vector<int> got = qwen35().encode(text);
    if (got != want && ++failures <= 10)
      ADD_FAILURE() << "text " << nlohmann::json(text).dump() << "\n got " << show(got) << "\nwant " << show(want);
    const std::string nfc = c.contains("nfc") ? c.at("nfc").get<std::string>() : text;
    const std::string back = qwen35().decode(want);
    if (back != nfc && ++failures <= 10)
      ADD_FAILURE() << "decode of " << nlohmann::json(text).dump() << " gave " << nlohmann::json(back).dump();
  }
  EXPECT_EQ(failures, 0);
}

// Every combining mark and canonical composition of current Unicode in a few contexts, ids
// from the Rust tokenizers crate (tools/tokenizer_golden/gen_golden.mjs): the normaliser's
// Unicode 9.0 data and the pre-tokenizer's \\p{L}/\\p{M}/\\p{N} classes against HF's.
TEST(TokenizerGolden, UnicodeProbe) {
  const auto doc = read_json(test::data_file("tokenizer/unicode_probe.json"));
  const auto& cases = doc.at("cases");
  ASSERT_GE(cases.size(), 20000u);
  int failures = 0;
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    const std::vector<int> want = c.at("ids");
    const std::vector<int> got = qwen35().encode(text);
    if (got != want && ++failures <= 10)
      ADD_FAILURE() << "text " << nlohmann::json(text).dump() << "\n got " << show(got) << "\nwant " << show(want);
  }
  EXPECT_EQ(failures, 0) << "of " << cases.size() << " probe strings";
}

// tests/data/tokenizer/reference/qwen3.5_golden.json: 72 cases (llama.cpp inputs + hand-written).
TEST(TokenizerGolden, SharedGolden) {
  const auto doc = read_json(test::data_file("tokenizer/reference/qwen3.5_golden.json"));
  ASSERT_EQ(doc.at("cases").size(), 72u);
  for (const auto& c : doc.at("cases")) {
    const std::string text = c.at("text");
    EXPECT_EQ(qwen35().encode(text), c.at("ids").get<std::vector<int>>()) << nlohmann::json(text).dump();
  }
}

// tests/data/tokenizer/reference/qwen3.5_paddler_reference.json: 15 independent references.
TEST(TokenizerGolden, PaddlerReference) {
  const auto doc = read_json(test::data_file("tokenizer/reference/qwen3.5_paddler_reference.json"));
  ASSERT_EQ(doc.size(), 15u);
  for (const auto& c : doc) {
    const std::string text = c.at("text");
    EXPECT_EQ(qwen35().encode(text), c.at("token_ids").get<std::vector<int>>()) << nlohmann::json(text).dump();
  }
}

// The HF tokenizer test vector for Qwen/Qwen3.5-9B (spec vision-and-chat.md §4.2).
TEST(TokenizerGolden, SpecVector) {
  const std::string text =
      "This is a test 😊\nI was born in 92000, and this is falsé.\n生活的真谛是\nHi  Hello\nHi   Hello\n\n \n  \n "
      "Hello\n<s>\nhi<s>there\nThe following string should be properly encoded: Hello.\nBut ird and ปี   ird   ด\n"
      "Hey how are you doing";
  const std::vector<int> want = {
      1919,  369,    264,   1228,  25677, 232,   198,   40,    557,   8950,  303,   220,   24,    17,    15,
      15,    15,     11,    321,   411,   369,   30882, 933,   13,    198,   103815, 132339, 95761, 198,  12675,
      220,   21251,  198,   12675, 256,   21251, 271,   46813, 21251, 198,   42589, 29,    198,   5834,  42589,
      29,    17977,  198,   760,   2614,  886,   1220,  381,   9971,  19873, 25,    21251, 13,    198,   3850,
      220,   2517,   321,   170827, 256,  220,   2517,  256,   149027, 198,  18103, 1204,  513,   488,   3604};
  EXPECT_EQ(qwen35().encode(text), want);
  EXPECT_EQ(qwen35().decode(want), text);
}

// The Qwen3 (151k) tokenizer.json with llama.cpp's Qwen2 goldens: a second vocabulary and
// regex (\p{N}{1,3}, no \p{M}) through the same loader. Optional: the 11 MB Qwen3 tokenizer.json
// is not in the repository, only in shared/.
TEST(TokenizerGolden, Qwen3VocabLlamaCppCases) {
  const std::string qwen3 = test::shared_file("data/tokenizer/qwen3/tokenizer.json");
  if (qwen3.empty()) GTEST_SKIP() << "optional check: " QINFER_SHARED_DIR "/data/tokenizer/qwen3 is absent";
  const Tokenizer t = Tokenizer::load(std::filesystem::path(qwen3).parent_path().string());
  const std::string inp = test::read_text(test::data_file("tokenizer/reference/llama.cpp_ggml-vocab-qwen2.gguf.inp"));
  const std::string out = test::read_text(test::data_file("tokenizer/reference/llama.cpp_ggml-vocab-qwen2.gguf.out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    size_t end = inp.find(sep, pos);
    if (end == std::string::npos) end = inp.size();
    texts.push_back(inp.substr(pos, end - pos));
    pos = end + sep.size();
  }
  std::vector<std::vector<int>> ids;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream nums(line);
    ids.emplace_back();
    for (int id; nums >> id;) ids.back().push_back(id);
  }
  ASSERT_EQ(texts.size(), 46u);
  ASSERT_EQ(ids.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(t.encode(texts[i]), ids[i]) << nlohmann::json(texts[i]).dump();
  EXPECT_EQ(t.encode("Hello world"), (std::vector<int>{9707, 1879}));
  EXPECT_EQ(t.vocab_size(), 151669);
}

// Every wikitext-2 test line round-trips (it is already NFC).
TEST(TokenizerGolden, WikitextRoundTrip) {
  const std::string wiki = test::read_text(test::data_file("wikitext-2/wiki.test.raw"));
  ASSERT_GT(wiki.size(), 1000000u);
  const std::vector<int> ids = qwen35().encode(wiki);
  EXPECT_GT(ids.size(), 250000u);
  EXPECT_EQ(qwen35().decode(ids), wiki);
}

}  // namespace
}  // namespace qinfer
