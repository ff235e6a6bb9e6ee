#include "tokenizer/pretokenizer.h"

#include <unicode/uchar.h>

#include <array>
#include <memory>

#include "tokenizer/utf8.h"

namespace qinfer::tok {

namespace {

constexpr std::string_view kQwen35Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
    "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

uint8_t compute_class(uint32_t cp) {
  uint8_t c = 0;
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER: case U_OTHER_LETTER:
      c |= kClsLetter;
      break;
    case U_NON_SPACING_MARK: case U_ENCLOSING_MARK: case U_COMBINING_SPACING_MARK:
      c |= kClsMark;
      break;
    case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER:
      c |= kClsNumber;
      break;
    default:
      break;
  }
  if (u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE)) c |= kClsSpace;
  return c;
}

// Classes of the Basic Multilingual Plane, computed once.
const std::array<uint8_t, 0x10000>& bmp_classes() {
  static const std::unique_ptr<std::array<uint8_t, 0x10000>> table = [] {
    auto t = std::make_unique<std::array<uint8_t, 0x10000>>();
    for (uint32_t cp = 0; cp < 0x10000; ++cp) (*t)[cp] = compute_class(cp);
    return t;
  }();
  return *table;
}

struct Char {
  uint32_t cp;
  uint32_t offset;  // byte offset of the character in the text
  uint8_t cls;
};

bool is_crlf(uint32_t cp) { return cp == '\r' || cp == '\n'; }
char ascii_lower(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') ? char(cp + 32) : char(cp); }

// Length in characters of a contraction ('s 't 're 've 'm 'll 'd, ASCII case
// folded) at position i, or 0.
size_t contraction(const std::vector<Char>& c, size_t i) {
  if (c[i].cp != '\'' || i + 1 >= c.size()) return 0;
  const char a = ascii_lower(c[i + 1].cp);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= c.size()) return 0;
  const char b = ascii_lower(c[i + 2].cp);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

bool pretokenizer_kind_from_regex(std::string_view regex, PretokenizerKind* kind) {
  if (regex == kQwen35Regex) {
    *kind = PretokenizerKind::kQwen35;
    return true;
  }
  if (regex == kQwen2Regex) {
    *kind = PretokenizerKind::kQwen2;
    return true;
  }
  return false;
}

uint8_t char_class(uint32_t cp) {
  if (cp < 0x10000) return bmp_classes()[cp];
  return compute_class(cp);
}

void pretokenize(std::string_view text, PretokenizerKind kind, std::vector<Piece>& out) {
  out.clear();
  if (text.empty()) return;
  const auto& bmp = bmp_classes();
  thread_local std::vector<Char> chars;
  chars.clear();
  for (size_t i = 0; i < text.size();) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    size_t len = 1;
    uint32_t cp = b;
    if (b >= 0x80) {
      len = utf8_sequence_length(text, i);
      if (len == 0) len = 1;  // callers pass well-formed text; never loop forever
      cp = utf8_decode(text, i, len);
    }
    chars.push_back({cp, static_cast<uint32_t>(i), cp < 0x10000 ? bmp[cp] : compute_class(cp)});
    i += len;
  }
  const size_t n = chars.size();
  const bool q35 = kind == PretokenizerKind::kQwen35;
  // "letter" run class and "punctuation" exclusion differ between the two kinds.
  const uint8_t word_cls = q35 ? (kClsLetter | kClsMark) : kClsLetter;
  const uint8_t not_punct = q35 ? (kClsSpace | kClsLetter | kClsMark | kClsNumber)
                                : (kClsSpace | kClsLetter | kClsNumber);
  auto is_word = [&](size_t k) { return (chars[k].cls & word_cls) != 0; };
  auto is_punct = [&](size_t k) { return (chars[k].cls & not_punct) == 0; };
  auto is_space = [&](size_t k) { return (chars[k].cls & kClsSpace) != 0; };
  auto emit = [&](size_t from, size_t to) {
    const uint32_t e = to < n ? chars[to].offset : static_cast<uint32_t>(text.size());
    out.push_back({chars[from].offset, e});
  };

  size_t i = 0;
  while (i < n) {
    const Char& c = chars[i];
    // 1. contractions
    if (const size_t len = contraction(chars, i)) {
      emit(i, i + len);
      i += len;
      continue;
    }
    // 2. [^\r\n\p{L}\p{N}]?<word>+
    {
      size_t j = i;
      const bool can_prefix = !is_crlf(c.cp) && (c.cls & (kClsLetter | kClsNumber)) == 0;
      if (can_prefix && i + 1 < n && is_word(i + 1)) {
        j = i + 1;
      }
      if (j > i || is_word(i)) {
        while (j < n && is_word(j)) ++j;
        emit(i, j);
        i = j;
        continue;
      }
    }
    // 3. \p{N}: one digit per piece
    if (c.cls & kClsNumber) {
      emit(i, i + 1);
      ++i;
      continue;
    }
    // 4. ' '?<punct>+[\r\n]*
    {
      size_t j = i;
      if (c.cp == ' ' && i + 1 < n && is_punct(i + 1)) j = i + 1;
      if (j > i || is_punct(i)) {
        while (j < n && is_punct(j)) ++j;
        while (j < n && is_crlf(chars[j].cp)) ++j;
        emit(i, j);
        i = j;
        continue;
      }
    }
    // Only white space is left at this point.
    size_t end = i;
    size_t last_crlf = SIZE_MAX;
    while (end < n && is_space(end)) {
      if (is_crlf(chars[end].cp)) last_crlf = end;
      ++end;
    }
    if (end == i) {  // unreachable for any character class; keep the cover exact
      emit(i, i + 1);
      ++i;
      continue;
    }
    // 5. \s*[\r\n]+ : up to the last line break of the run
    if (last_crlf != SIZE_MAX) {
      emit(i, last_crlf + 1);
      i = last_crlf + 1;
      continue;
    }
    // 6. \s+(?!\S) : the run, less its last character when a non-space follows
    if (end == n) {
      emit(i, end);
      i = end;
      continue;
    }
    if (end - i >= 2) {
      emit(i, end - 1);
      i = end - 1;
      continue;
    }
    // 7. \s+
    emit(i, end);
    i = end;
  }
}

}  // namespace qinfer::tok
