// Added/special tokens, vocabulary queries and decode options on the real Qwen3.5 files.
#include <gtest/gtest.h>

#include "test_util.h"
#include "util/error.h"

namespace qinfer {
namespace {

using test::qwen35;
using V = std::vector<int>;

TEST(TokenizerSpecial, VocabularyShape) {
  const Tokenizer& t = qwen35();
  EXPECT_EQ(t.vocab_size(), 248077);
  ASSERT_EQ(t.added_tokens().size(), 33u);
  EXPECT_EQ(t.added_tokens().front().id, 248044);
  EXPECT_EQ(t.added_tokens().back().id, 248076);
  EXPECT_EQ(t.token_text(220), " ");
  EXPECT_EQ(t.token_text(198), "\n");
  EXPECT_EQ(t.token_text(271), "\n\n");
  for (int d = 0; d <= 9; ++d) EXPECT_EQ(t.token_text(15 + d), std::string(1, static_cast<char>('0' + d)));
  EXPECT_EQ(t.token_text(248046), "<|im_end|>");
  EXPECT_EQ(t.token_text(-1), "");
  EXPECT_EQ(t.token_text(248077), "");
  EXPECT_EQ(t.token_text(248319), "");
  EXPECT_EQ(t.token_id("<|im_start|>"), 248045);
  EXPECT_EQ(t.token_id("</think>"), 248069);
  EXPECT_EQ(t.token_id("<|audio_pad|>"), 248076);
  EXPECT_EQ(t.token_id(" "), 220);
  EXPECT_EQ(t.token_id("Hello"), 9419);
  EXPECT_EQ(t.token_id("Ġworld"), std::nullopt);  // lookups are by raw bytes, not byte-level text
  EXPECT_EQ(t.token_id(" world"), 1814);
  EXPECT_EQ(t.token_id("no such token at all"), std::nullopt);
}

TEST(TokenizerSpecial, SpecialFlags) {
  const Tokenizer& t = qwen35();
  for (int id = 248044; id <= 248057; ++id) EXPECT_TRUE(t.is_special(id)) << id;
  for (int id = 248058; id <= 248069; ++id) EXPECT_FALSE(t.is_special(id)) << id;  // <tool_call> ... </think>
  for (int id = 248070; id <= 248076; ++id) EXPECT_TRUE(t.is_special(id)) << id;   // from tokenizer_config.json
  EXPECT_FALSE(t.is_special(220));
  EXPECT_FALSE(t.is_special(-5));
  EXPECT_FALSE(t.is_special(300000));
}

TEST(TokenizerSpecial, ParseSpecial) {
  const Tokenizer& t = qwen35();
  // README spot checks.
  EXPECT_EQ(t.encode("<|im_start|>"), V{248045});
  EXPECT_EQ(t.encode("<|im_start|>", false), (V{27, 91, 316, 4747, 91, 29}));
  EXPECT_EQ(t.encode("人工智能"), V{109015});
  // The 7 tokens that only tokenizer_config.json has.
  EXPECT_EQ(t.encode("<|audio_start|><tts_pad><tts_text_bos_single>x<|audio_pad|>"),
            (V{248070, 248072, 248075, 87, 248076}));
  // Non-special added tokens are matched even with parse_special = false.
  EXPECT_EQ(t.encode("<think>a</think>", false), t.encode("<think>a</think>", true));
  EXPECT_EQ(t.encode("<think>a</think>").front(), 248068);
  const V chat = t.encode("<|im_start|>user\nhi<|im_end|>\n");
  EXPECT_EQ(chat.front(), 248045);
  EXPECT_EQ(chat[chat.size() - 2], 248046);
  const V plain = t.encode("<|im_start|>user\nhi<|im_end|>\n", false);
  for (int id : plain) EXPECT_LT(id, 248044);
  EXPECT_EQ(t.decode(plain), "<|im_start|>user\nhi<|im_end|>\n");
  // Leftmost, then longest; near misses stay text.
  EXPECT_EQ(t.encode("<<|im_end|>>"), (V{27, 248046, 29}));
  EXPECT_EQ(t.encode("<|im_end"), t.encode("<|im_end", false));
  EXPECT_EQ(t.encode("<tts_text_bos_single>"), V{248075});
  EXPECT_EQ(t.encode("<tts_text_bos>"), V{248073});
}

TEST(TokenizerSpecial, DecodeSkipSpecial) {
  const Tokenizer& t = qwen35();
  const std::string text = "<|im_start|>assistant\n<think>\nhmm\n</think>\n\n<tool_call>\n{}\n</tool_call><|im_end|><|endoftext|>";
  const V ids = t.encode(text);
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_EQ(t.decode(ids, true), "assistant\n<think>\nhmm\n</think>\n\n<tool_call>\n{}\n</tool_call>");
  EXPECT_EQ(t.decode({}), "");
}

TEST(TokenizerSpecial, BadIdsAndBadText) {
  const Tokenizer& t = qwen35();
  for (int bad : {-1, 248077, 248319, 1 << 30}) {
    try {
      t.decode({9419, bad});
      ADD_FAILURE() << "no error for id " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(t.encode(std::string("ab\xC3")), Error);      // truncated sequence
  EXPECT_THROW(t.encode(std::string("a\xFF" "b")), Error);   // never valid
  EXPECT_THROW(t.encode(std::string("\xED\xA0\x80")), Error);  // surrogate
  EXPECT_THROW(t.encode(std::string("\xC0\xAF")), Error);      // overlong
  EXPECT_EQ(t.encode(""), V{});
  EXPECT_EQ(t.encode(std::string("a\0b", 3)), (V{64, 0 + t.token_id(std::string(1, '\0')).value(), 65}));
}

// A lone byte token that is half of a UTF-8 sequence decodes to U+FFFD, like HF.
TEST(TokenizerSpecial, DecodeInvalidUtf8IsReplaced) {
  const Tokenizer& t = qwen35();
  const int c3 = *t.token_id("\xC3");
  const int a9 = *t.token_id("\xA9");
  EXPECT_EQ(t.decode({c3, a9}), "é");
  EXPECT_EQ(t.decode({c3}), "\xEF\xBF\xBD");
  EXPECT_EQ(t.decode({a9, 64}), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(t.decode({c3, 64}), "\xEF\xBF\xBD" "a");
}

// Long inputs do not blow up (regex backtracking, BPE on huge words).
TEST(TokenizerSpecial, LongRuns) {
  const Tokenizer& t = qwen35();
  for (const std::string& s : {std::string(200000, ' '), std::string(100000, 'a'), std::string(50000, '\n'),
                               std::string(30000, '7'), [] { std::string x; for (int i = 0; i < 20000; ++i) x += "e\xCC\x81"; return x; }()}) {
    const V ids = t.encode(s);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(t.decode(ids).size(), s[0] == 'e' ? s.size() / 3 * 2 : s.size());  // é composes to 2 bytes
  }
}

}  // namespace
}  // namespace qinfer
