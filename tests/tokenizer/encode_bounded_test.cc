// Tokenizer::encode_bounded (issue 12 item 9: a 50 MB prompt was tokenized in full before the
// context-length 400): the same tokens as encode(), cut into pieces however small, and a stop
// after max_tokens tokens that reads only about that much of the text.
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"
#include "util/error.h"

namespace qinfer {
namespace {

using test::qwen35;

TEST(EncodeBounded, PiecesGiveExactlyTheTokensOfEncode) {
  const std::string wiki = test::read_text(test::data_file("wikitext-2/wiki.test.raw")).substr(0, 200000);
  const std::vector<int> want = qwen35().encode(wiki);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{300}, size_t{1} << 16}) {
    size_t read = 0;
    EXPECT_EQ(qwen35().encode_bounded(wiki, true, SIZE_MAX, &read, piece), want) << "piece " << piece;
    EXPECT_EQ(read, wiki.size());
  }
  // Awkward texts around the cuts: spaces, newlines, marks, digits, CJK, added tokens, contractions.
  const std::vector<std::string> atoms = {" ", "  ", "\n", "\r\n", "\t", "a", "Zeta", "b\xCC\x81", "e\xCC\x81",
                                          "\xC3\xA9", "12", "'s", "'LL", ".", "!!", "\xE4\xB8\xAD\xE6\x96\x87",
                                          "<|im_start|>", "<think>", "\xE3\x80\x80", "\xC2\xA0", "x", "-", "_"};
  std::mt19937 rng(12);
  for (int t = 0; t < 3000; ++t) {
    std::string s;
    int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) s += atoms[rng() % atoms.size()];
    const std::vector<int> whole = qwen35().encode(s);
    for (size_t piece : {size_t{1}, size_t{3}}) {
      ASSERT_EQ(qwen35().encode_bounded(s, true, SIZE_MAX, nullptr, piece), whole)
          << nlohmann::json(s).dump() << " piece " << piece;
      ASSERT_EQ(qwen35().encode_bounded(s, false, SIZE_MAX, nullptr, piece), qwen35().encode(s, false))
          << nlohmann::json(s).dump();
    }
  }
}

TEST(EncodeBounded, StopsSoonAfterTheLimit) {
  std::string big;
  const std::string line = "The quick brown fox jumps over the lazy dog, again and again.\n";
  while (big.size() < (size_t{8} << 20)) big += line;
  const size_t limit = 4096;
  size_t read = 0;
  const std::vector<int> got = qwen35().encode_bounded(big, true, limit, &read);
  EXPECT_GT(got.size(), limit);
  // A prefix of the full encoding ...
  const std::vector<int> head = qwen35().encode(big.substr(0, read));
  EXPECT_EQ(got, head);
  // ... read in pieces of 64 KiB: far less than the 8 MiB text (each token is at most a few
  // dozen bytes here, so 4096 tokens lie within the first piece or two).
  EXPECT_LE(read, size_t{3} << 16);
  // Under the limit: everything.
  size_t all = 0;
  EXPECT_EQ(qwen35().encode_bounded(line, true, limit, &all), qwen35().encode(line));
  EXPECT_EQ(all, line.size());
  // Invalid UTF-8 is refused as encode() refuses it.
  EXPECT_THROW(qwen35().encode_bounded("ab\xFF", true, 10), Error);
}

}  // namespace
}  // namespace qinfer
