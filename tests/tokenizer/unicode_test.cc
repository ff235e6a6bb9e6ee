// UTF-8 helpers, the byte-level alphabet, NFC and the Oniguruma -> PCRE2 pattern rewrite.
#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace qinfer::tok {
namespace {

TEST(Utf8, Validation) {
  EXPECT_EQ(utf8_first_invalid("plain ascii"), std::nullopt);
  EXPECT_EQ(utf8_first_invalid("é 你 😊"), std::nullopt);
  EXPECT_EQ(utf8_first_invalid("ab\xC3"), 2u);
  EXPECT_EQ(utf8_first_invalid("\x80"), 0u);
  EXPECT_EQ(utf8_first_invalid("a\xE0\x80\x80"), 1u);      // overlong
  EXPECT_EQ(utf8_first_invalid("\xED\xBF\xBF"), 0u);       // surrogate
  EXPECT_EQ(utf8_first_invalid("\xF4\x90\x80\x80"), 0u);   // above U+10FFFF
  EXPECT_EQ(utf8_first_invalid("\xF0\x9F\x98\x8A"), std::nullopt);
}

TEST(Utf8, LossyReplacesMaximalSubparts) {
  const auto lossy = [](std::string_view s) {
    std::string out;
    append_utf8_lossy(out, s);
    return out;
  };
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(lossy("abc"), "abc");
  EXPECT_EQ(lossy("a\xFF" "b"), "a" + r + "b");
  EXPECT_EQ(lossy("\xF0\x9F\x98"), r);                 // one truncated sequence -> one U+FFFD
  EXPECT_EQ(lossy("\xF0\x9F" "a"), r + "a");
  EXPECT_EQ(lossy("\xE0\x80"), r + r);                 // E0 80 is never valid: two subparts
  EXPECT_EQ(lossy("\xC3\xA9\xC3"), "é" + r);
}

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(utf8_incomplete_tail(""), 0u);
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xC3"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98\x8A"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xE0\x80"), 0u);  // already invalid: nothing to wait for
  EXPECT_EQ(utf8_incomplete_tail("\xFF"), 0u);
}

TEST(ByteLevel, Alphabet) {
  EXPECT_EQ(byte_to_unicode(' '), U'\u0120');
  EXPECT_EQ(byte_to_unicode('\n'), U'\u010A');
  EXPECT_EQ(byte_to_unicode('!'), U'!');
  EXPECT_EQ(byte_to_unicode(0xAD), U'\u0143');  // the last of the 68 remapped bytes
  EXPECT_EQ(byte_to_unicode(0xFF), U'\u00FF');
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
  EXPECT_EQ(byte_level_encode(" hi\n"), "ĠhiĊ");
  EXPECT_EQ(byte_level_decode("Ġworld"), " world");
  EXPECT_EQ(byte_level_decode("\u4F60"), std::nullopt);  // not in the alphabet
  EXPECT_EQ(byte_level_decode("\xC3"), std::nullopt);
}

TEST(Normalizer, Nfc) {
  EXPECT_EQ(nfc("cafe\xCC\x81"), "café");
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");  // Angstrom sign -> Å
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // Hangul jamo compose
  EXPECT_EQ(nfc("ascii only"), "ascii only");
  EXPECT_EQ(nfc("ﬁ"), "ﬁ");  // NFC keeps compatibility characters
}

// Hugging Face's normaliser has Unicode 9.0 data: marks and compositions of Unicode 10 and
// later are class 0 and compose with nothing (outputs checked with the Rust tokenizers crate
// 0.23.2 normalizer, tools/tokenizer_golden). Current Unicode would reorder or compose each.
TEST(Nfc, Unicode9DataAsHuggingFace) {
  // U+09FE BENGALI SANDHI MARK (10.0, ccc 230 today) stays before U+09BC NUKTA (ccc 7).
  EXPECT_EQ(nfc("ক়৾"), "ক়৾");
  // U+0C3C TELUGU SIGN NUKTA (14.0, ccc 7) stays after U+0C4D VIRAMA (ccc 9).
  EXPECT_EQ(nfc("క఼్"), "క఼్");
  EXPECT_EQ(nfc("క఼్"), "క఼్");
  // U+1AC1 COMBINING LEFT PARENTHESIS ABOVE LEFT (14.0, ccc 230) stays before U+0316 (ccc 220).
  EXPECT_EQ(nfc("a̖᫁"), "a̖᫁");
  // U+11935 U+11930 (Dives Akuru, 13.0) do not compose to U+11938, nor does U+11938 decompose.
  EXPECT_EQ(nfc("𑤸"), "𑤸");
  EXPECT_EQ(nfc("𑤸"), "𑤸");
  // Unicode 9.0 marks still reorder and compose: U+1DFB (9.0, ccc 230) moves after U+0316,
  // and a new mark ends a run without breaking the composition before it.
  EXPECT_EQ(nfc("a̖᷻"), "a̖᷻");
  EXPECT_EQ(nfc("á̖"), "á̖");
  EXPECT_EQ(nfc("é৾"), "é৾");
}

TEST(Pretokenizer, PatternRewrite) {
  EXPECT_EQ(translate_pattern("(?i:'s|'t)"), "(?:'[sS]|'[tT])");
  EXPECT_EQ(translate_pattern("(?i:'s)|s"), "(?:'[sS])|s");
  EXPECT_EQ(translate_pattern("\\p{L}+"), "\\p{L}+");
  const std::string ws = translate_pattern("\\s");
  EXPECT_NE(ws.find("\\x{85}"), std::string::npos);
  EXPECT_EQ(ws.front(), '[');
  EXPECT_EQ(translate_pattern("[^\\s\\p{L}]").find("[^\\x{09}"), 0u);  // expanded inside the class
  EXPECT_EQ(translate_pattern("\\S").substr(0, 2), "[^");
}

TEST(Pretokenizer, QwenSplit) {
  const RegexSplitter s(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
      "test");
  const auto split = [&](std::string_view text) {
    std::vector<std::string_view> parts;
    s.split(text, parts);
    return std::vector<std::string>(parts.begin(), parts.end());
  };
  using W = std::vector<std::string>;
  EXPECT_EQ(split("Hello world"), (W{"Hello", " world"}));
  EXPECT_EQ(split("I'LL 123"), (W{"I", "'LL", " ", "1", "2", "3"}));
  EXPECT_EQ(split("a  b"), (W{"a", " ", " b"}));
  EXPECT_EQ(split("x\n\n  y"), (W{"x", "\n\n", " ", " y"}));
  EXPECT_EQ(split("e\xCC\x81t\xC3\xA9!!\r\n"), (W{"e\xCC\x81t\xC3\xA9", "!!\r\n"}));
  // U+0085 is white space, as in Oniguruma (as punctuation it would give "\x85\x85", "a").
  EXPECT_EQ(split("\xC2\x85\xC2\x85" "a"), (W{"\xC2\x85", "\xC2\x85" "a"}));
  EXPECT_EQ(split("'\xC5\xBFt"), (W{"'\xC5\xBFt"}));        // 'ſ is not the contraction 's
  EXPECT_EQ(split(""), W{});
}

}  // namespace
}  // namespace qinfer::tok
