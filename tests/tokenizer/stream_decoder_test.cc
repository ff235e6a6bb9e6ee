// StreamDecoder: the pieces always join to decode(ids), and each piece is valid UTF-8.
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace qinfer {
namespace {

using test::qwen35;

std::string stream(const Tokenizer& t, const std::vector<int>& ids, bool skip, std::vector<std::string>* pieces = nullptr) {
  StreamDecoder d(t, skip);
  std::string out;
  for (int id : ids) {
    std::string p = d.push(id);
    EXPECT_FALSE(tok::utf8_first_invalid(p).has_value());
    if (pieces) pieces->push_back(p);
    out += p;
  }
  out += d.flush();
  return out;
}

TEST(StreamDecoder, MultiByteCharactersSplitAcrossTokens) {
  const Tokenizer& t = qwen35();
  // 😊 is two tokens (25677 232): the first push must hold back the partial sequence.
  std::vector<std::string> pieces;
  EXPECT_EQ(stream(t, {1228, 25677, 232, 198}, false, &pieces), " test 😊\n");
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(pieces[1], " ");
  EXPECT_EQ(pieces[2], "😊");
  const std::string text = "Ελληνικά 你好 👨‍👩‍👧‍👦 🇯🇵 नमस्ते ปี e\xCC\x81 <think>x</think><|im_end|>";
  const auto ids = t.encode(text);
  EXPECT_EQ(stream(t, ids, false), t.decode(ids));
  EXPECT_EQ(stream(t, ids, true), t.decode(ids, true));
}

// Random id sequences, mostly single-byte tokens (so UTF-8 sequences are cut anywhere and
// ill-formed ones occur), plus ordinary and special tokens.
TEST(StreamDecoder, RandomSequencesMatchFullDecode) {
  const Tokenizer& t = qwen35();
  std::vector<int> byte_ids;
  for (int b = 0; b < 256; ++b) byte_ids.push_back(*t.token_id(std::string(1, static_cast<char>(b))));
  std::mt19937 rng(1234);
  for (int round = 0; round < 2000; ++round) {
    std::vector<int> ids;
    const int n = 1 + rng() % 12;
    for (int i = 0; i < n; ++i) {
      const unsigned r = rng() % 10;
      if (r < 6) {  // lead/continuation bytes are the interesting part
        static const int pool[] = {0x80, 0x8F, 0x9F, 0xA0, 0xBF, 0xC2, 0xC3, 0xDF, 0xE0, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 'a', ' '};
        ids.push_back(byte_ids[pool[rng() % (sizeof pool / sizeof pool[0])]]);
      } else if (r < 8) {
        ids.push_back(rng() % 248044);
      } else {
        ids.push_back(248044 + rng() % 33);
      }
    }
    const bool skip = rng() % 2;
    EXPECT_EQ(stream(t, ids, skip), t.decode(ids, skip)) << "round " << round;
  }
}

TEST(StreamDecoder, FlushEmitsReplacementForUnfinishedSequence) {
  const Tokenizer& t = qwen35();
  StreamDecoder d(t);
  EXPECT_EQ(d.push(*t.token_id("\xE4")), "");
  EXPECT_EQ(d.push(*t.token_id("\xBD")), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(d.flush(), "");
  EXPECT_EQ(d.push(9419), "Hello");  // usable after flush
}

TEST(StreamDecoder, BadIdThrows) {
  StreamDecoder d(qwen35());
  EXPECT_THROW(d.push(248100), Error);
  EXPECT_THROW(d.push(-3), Error);
}

}  // namespace
}  // namespace qinfer
