#include <gtest/gtest.h>

#include "util/py_escape.h"

namespace qinfer {
namespace {

// Decodes one escape (s holds what follows the backslash); returns the text and
// how many characters it consumed.
std::pair<std::string, size_t> one(std::string_view s, EscapeResult want = EscapeResult::kOk) {
  std::string out;
  size_t i = 0;
  EXPECT_EQ(py_decode_escape(s, i, out, append_utf8), want) << s;
  return {out, i};
}

TEST(PyEscape, DecodesLikePython) {
  EXPECT_EQ(one("n"), std::make_pair(std::string("\n"), size_t{1}));
  EXPECT_EQ(one("t rest"), std::make_pair(std::string("\t"), size_t{1}));
  EXPECT_EQ(one("\\"), std::make_pair(std::string("\\"), size_t{1}));
  EXPECT_EQ(one("'"), std::make_pair(std::string("'"), size_t{1}));
  EXPECT_EQ(one("\n"), std::make_pair(std::string(), size_t{1}));          // line continuation
  EXPECT_EQ(one("x41z"), std::make_pair(std::string("A"), size_t{3}));
  EXPECT_EQ(one("u00e9"), std::make_pair(std::string("\xc3\xa9"), size_t{5}));
  EXPECT_EQ(one("U0001F600"), std::make_pair(std::string("\xf0\x9f\x98\x80"), size_t{9}));
  EXPECT_EQ(one("101"), std::make_pair(std::string("A"), size_t{3}));      // octal, 3 digits
  EXPECT_EQ(one("0"), std::make_pair(std::string(1, '\0'), size_t{1}));
  EXPECT_EQ(one("7777"), std::make_pair(std::string("\xc7\xbf"), size_t{3}));  // at most 3 digits: 0o777
  EXPECT_EQ(one("q"), std::make_pair(std::string("\\q"), size_t{1}));      // unknown: kept as written
  EXPECT_EQ(one("ud800"), std::make_pair(std::string("\xef\xbf\xbd"), size_t{5}));  // lone surrogate -> U+FFFD
}

TEST(PyEscape, MalformedEscapesLeaveOutputAndPositionAlone) {
  for (const char* s : {"x4", "xg1", "u12", "U0001F60", "u12G4"}) {
    std::string out = "keep";
    size_t i = 0;
    EXPECT_EQ(py_decode_escape(s, i, out, append_utf8), EscapeResult::kTruncated) << s;
    EXPECT_EQ(out, "keep");
    EXPECT_EQ(i, 0u);
  }
  std::string out;
  size_t i = 0;
  EXPECT_EQ(py_decode_escape("U00110000", i, out, append_utf8), EscapeResult::kIllegal);
  EXPECT_EQ(i, 0u);
}

TEST(PyEscape, JsonEscapesBytesLikeJsonDumps) {
  std::string out;
  for (char c : std::string("a\"\\\n\r\t\b\f\x01\x1f \x7f~\xc3\xa9")) json_escape_byte(out, c);
  EXPECT_EQ(out, "a\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f \x7f~\xc3\xa9");
}

}  // namespace
}  // namespace qinfer
