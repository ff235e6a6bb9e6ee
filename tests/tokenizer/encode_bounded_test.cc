// Tokenizer::encode_bounded (issue 12 item 9: a 50 MB prompt was tokenized in full before the
// context-length 400): the same tokens as encode(), cut into pieces however small, and a stop
// after max_tokens tokens that reads only about that much of the text.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string_view>

#include "test_util.h"
#include "util/error.h"

namespace qinfer {
namespace {

using test::qwen35;

TEST(EncodeBounded, PiecesGiveExactlyTheTokensOfEncode) {
  const std::string wiki = test::read_text(test::data_file("wikitext-2/wiki.test.raw")).substr(0, 200000);
  const std::vector<int> want = qwen35().encode(wiki);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{300}, size_t{1} << 16}) {
    const Tokenizer::Bounded r = qwen35().encode_bounded(wiki, true, SIZE_MAX, piece);
    EXPECT_EQ(r.ids, want) << "piece " << piece;
    EXPECT_EQ(r.bytes_read, wiki.size());
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.tokens, want.size());
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
      ASSERT_EQ(qwen35().encode_bounded(s, true, SIZE_MAX, piece).ids, whole)
          << nlohmann::json(s).dump() << " piece " << piece;
      ASSERT_EQ(qwen35().encode_bounded(s, false, SIZE_MAX, piece).ids, qwen35().encode(s, false))
          << nlohmann::json(s).dump();
    }
  }
}

TEST(EncodeBounded, StopsSoonAfterTheLimit) {
  std::string big;
  const std::string line = "The quick brown fox jumps over the lazy dog, again and again.\n";
  while (big.size() < (size_t{8} << 20)) big += line;
  const size_t limit = 4096;
  const Tokenizer::Bounded got = qwen35().encode_bounded(big, true, limit);
  const size_t read = got.bytes_read;
  EXPECT_FALSE(got.complete);
  EXPECT_GT(got.tokens, limit);
  // A prefix of the full encoding ...
  const std::vector<int> head = qwen35().encode(big.substr(0, read));
  EXPECT_EQ(got.ids, head);
  // ... read in pieces of 64 KiB: far less than the 8 MiB text (each token is at most a few
  // dozen bytes here, so 4096 tokens lie within the first piece or two).
  EXPECT_LE(read, size_t{3} << 16);
  // Under the limit: everything.
  const Tokenizer::Bounded all = qwen35().encode_bounded(line, true, limit);
  EXPECT_EQ(all.ids, qwen35().encode(line));
  EXPECT_EQ(all.bytes_read, line.size());
  EXPECT_TRUE(all.complete);
  // Invalid UTF-8 is refused as encode() refuses it.
  EXPECT_THROW(qwen35().encode_bounded("ab\xFF", true, 10), Error);
}


// The bound BPE gives: max_token_bytes() is the longest token, vocabulary and added tokens, in
// raw bytes (after the byte-level decoding).
TEST(EncodeBounded, MaxTokenBytesIsTheLongestToken) {
  size_t longest = 0;
  for (int id = 0; id < qwen35().vocab_size(); ++id) longest = std::max(longest, qwen35().token_text(id).size());
  EXPECT_EQ(qwen35().max_token_bytes(), longest);
  EXPECT_GE(longest, std::string("<|vision_start|>").size());
}

std::string repeat(std::string_view unit, size_t bytes) {
  std::string s;
  while (s.size() < bytes) s += unit;
  return s;
}

// Issue 12 leftover: a stretch with no safe cut (one long CJK or repeated-letter word, one piece
// for the pre-tokenizer) was given to BPE whole before the context-length check. BPE makes at
// least ceil(bytes / max_token_bytes) tokens, so only a bounded prefix of it (here: none) may
// reach BPE, and the count reported is a true lower bound over the limit.
TEST(EncodeBounded, NoSafeCutStretchIsNotGivenToBpeWhole) {
  const size_t L = qwen35().max_token_bytes();
  const size_t limit = 2048;
  const std::vector<std::string> units = {"\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97", "a", "ab", "\xED\x95\x9C",
                                          "x\xE4\xB8\xAD"};
  for (const std::string& unit : units) {
    const std::string big = repeat(unit, size_t{8} << 20);
    for (const std::string& text : {big, "<|im_start|>user\n" + big + "<|im_end|>", "Hello world. " + big}) {
      const Tokenizer::Bounded r = qwen35().encode_bounded(text, true, limit);
      EXPECT_FALSE(r.complete) << unit;
      EXPECT_GT(r.tokens, limit) << unit;
      EXPECT_LE(r.bpe_bytes, (limit + 1) * L) << unit;  // was all 8 MiB
      EXPECT_LT(r.bytes_read, size_t{1} << 16) << unit;
      EXPECT_EQ(r.ids, qwen35().encode(text.substr(0, r.bytes_read))) << unit;
    }
  }
  // A stretch of more than limit * L bytes is over the limit before any BPE at all; the count
  // is still a lower bound of the real one.
  const std::string just_over = repeat("\xE4\xB8\xAD", limit * L + 1);
  const Tokenizer::Bounded r = qwen35().encode_bounded(just_over, true, limit);
  EXPECT_EQ(r.bpe_bytes, 0u);
  EXPECT_GT(r.tokens, limit);
  EXPECT_LE(r.tokens, qwen35().encode(just_over).size());
}

// Random valid UTF-8 from code points of many scripts, combining marks and Hangul jamo (which
// NFC composes, three to one: the bound must count bytes after NFC).
std::string random_text(std::mt19937& rng, size_t chars) {
  static const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {0x20, 0x7E},     {0x0A, 0x0A},     {0xA0, 0x24F},    {0x300, 0x36F},   {0x370, 0x3FF},   {0x400, 0x4FF},
      {0x591, 0x5F4},   {0x600, 0x6FF},   {0x900, 0x97F},   {0x1100, 0x11FF}, {0x1F00, 0x1FFF}, {0x2000, 0x206F},
      {0x3000, 0x30FF}, {0x4E00, 0x4E80}, {0xAC00, 0xAC40}, {0xFF00, 0xFFEF}, {0x1F300, 0x1F64F}};
  std::string s;
  for (size_t i = 0; i < chars; ++i) {
    const auto [lo, hi] = ranges[rng() % ranges.size()];
    const char32_t c = lo + rng() % (hi - lo + 1);
    if (c < 0x80) {
      s += static_cast<char>(c);
    } else if (c < 0x800) {
      s += static_cast<char>(0xC0 | (c >> 6));
      s += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      s += static_cast<char>(0xE0 | (c >> 12));
      s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (c >> 18));
      s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return s;
}

// At or under the limit nothing changes: the ids of encode(). Over it: a prefix of them, and a
// count that is over the limit and never more than the real one.
TEST(EncodeBounded, UnderTheLimitTheIdsOfEncodeOverItATrueLowerBound) {
  std::mt19937 rng(1212);
  std::vector<std::string> texts = {
      test::read_text(test::data_file("wikitext-2/wiki.test.raw")).substr(0, 30000),
      repeat("\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97\xE7\xAC\xA6", 6000),
      repeat("a", 5000),
      repeat("\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB", 3000),                  // decomposed Hangul: NFC shrinks it 3x
      repeat("\xCE\xB1\xCC\x93\xCC\x81\xCD\x85", 2000),                      // alpha + 3 marks: one character after NFC
      repeat("<|im_start|>\xE4\xB8\xAD<think>", 500)};
  for (int i = 0; i < 40; ++i) texts.push_back(random_text(rng, 20 + rng() % 3000));
  for (const std::string& t : texts) {
    const std::vector<int> full = qwen35().encode(t);
    const size_t n = full.size();
    for (size_t limit : {n, n + 1, 2 * n, size_t{SIZE_MAX}}) {
      for (size_t piece : {size_t{1} << 16, size_t{64}}) {
        const Tokenizer::Bounded r = qwen35().encode_bounded(t, true, limit, piece);
        ASSERT_TRUE(r.complete) << "limit " << limit << " " << nlohmann::json(t.substr(0, 80)).dump();
        ASSERT_EQ(r.ids, full);
        ASSERT_EQ(r.tokens, n);
      }
    }
    for (size_t limit : {size_t{0}, size_t{1}, n / 3, n / 2, n - 1}) {
      if (limit >= n) continue;
      const Tokenizer::Bounded r = qwen35().encode_bounded(t, true, limit);
      ASSERT_GT(r.tokens, limit);
      ASSERT_LE(r.tokens, n) << "limit " << limit << " " << nlohmann::json(t.substr(0, 80)).dump();
      ASSERT_EQ(r.ids, qwen35().encode(t.substr(0, r.bytes_read)));
      ASSERT_EQ(r.complete, r.bytes_read == t.size());
    }
  }
}

}  // namespace
}  // namespace qinfer
