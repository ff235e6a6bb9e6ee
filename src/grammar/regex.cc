#include "grammar/regex.h"

#include <string>

namespace qinfer::grammar {

namespace {

[[noreturn]] void bad(std::string_view where, size_t at, const std::string& what) {
  throw GrammarError(std::string(where) + ": " + what + " at offset " + std::to_string(at));
}

const CodeRanges kDigit = {{'0', '9'}};
const CodeRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodeRanges kSpace = {{'\t', '\r'}, {' ', ' '}};

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

uint32_t read_hex(std::string_view s, size_t& i, size_t n, std::string_view where) {
  uint32_t v = 0;
  for (size_t k = 0; k < n; ++k) {
    if (i >= s.size() || hexval(s[i]) < 0) bad(where, i, "expected a hex digit");
    v = v * 16 + uint32_t(hexval(s[i++]));
  }
  return v;
}

class RegexParser {
 public:
  RegexParser(std::string_view s, bool json, std::string_view where) : s_(s), json_(json), where_(where) {}

  NodePtr parse() {
    if (i_ < s_.size() && s_[i_] == '^') ++i_;
    NodePtr n = parse_alt();
    if (i_ < s_.size()) bad(where_, i_, s_[i_] == ')' ? "unbalanced ')'" : "unexpected character");
    return n;
  }

 private:
  bool at_end_anchor() const { return i_ + 1 == s_.size() && s_[i_] == '$'; }

  NodePtr parse_alt() {
    std::vector<NodePtr> alts{parse_seq()};
    while (i_ < s_.size() && s_[i_] == '|') {
      ++i_;
      alts.push_back(parse_seq());
    }
    return alts.size() == 1 ? alts[0] : alt(std::move(alts));
  }

  NodePtr parse_seq() {
    std::vector<NodePtr> items;
    while (i_ < s_.size() && s_[i_] != '|' && s_[i_] != ')') {
      if (at_end_anchor()) {
        ++i_;
        break;
      }
      items.push_back(parse_repeat(parse_atom()));
    }
    return seq(std::move(items));
  }

  bool read_int(int& v) {
    size_t j = i_;
    long x = 0;
    while (j < s_.size() && s_[j] >= '0' && s_[j] <= '9') {
      x = x * 10 + (s_[j] - '0');
      if (x > 1000000) x = 1000000;
      ++j;
    }
    if (j == i_) return false;
    v = int(x);
    i_ = j;
    return true;
  }

  NodePtr parse_repeat(NodePtr atom) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      int mn = 0, mx = -1;
      if (c == '*') {
        ++i_;
      } else if (c == '+') {
        mn = 1;
        ++i_;
      } else if (c == '?') {
        mx = 1;
        ++i_;
      } else if (c == '{') {
        const size_t save = i_;
        ++i_;
        if (!read_int(mn)) {
          i_ = save;
          return atom;  // a literal '{' (as Python)
        }
        mx = mn;
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          if (!read_int(mx)) mx = -1;
        }
        if (i_ >= s_.size() || s_[i_] != '}') {
          i_ = save;
          return atom;
        }
        ++i_;
        if (mn > kMaxRepeat || mx > kMaxRepeat) bad(where_, save, "repeat count above 1000");
        if (mx >= 0 && mx < mn) bad(where_, save, "repeat {m,n} with n < m");
      } else {
        return atom;
      }
      if (i_ < s_.size() && (s_[i_] == '?' || s_[i_] == '+')) ++i_;  // lazy / possessive
      atom = repeat(atom, mn, mx);
    }
    return atom;
  }

  NodePtr parse_atom() {
    const size_t at = i_;
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      if (i_ < s_.size() && s_[i_] == '?') {
        ++i_;
        if (i_ < s_.size() && s_[i_] == ':') {
          ++i_;
        } else if (i_ < s_.size() && (s_[i_] == 'P' || s_[i_] == '<') &&
                   !(s_[i_] == '<' && i_ + 1 < s_.size() && (s_[i_ + 1] == '=' || s_[i_ + 1] == '!'))) {
          if (s_[i_] == 'P') ++i_;
          if (i_ >= s_.size() || s_[i_] != '<') bad(where_, at, "unsupported group syntax (?P");
          const size_t close = s_.find('>', i_);
          if (close == std::string_view::npos) bad(where_, at, "unterminated group name");
          i_ = close + 1;
        } else {
          bad(where_, at, "unsupported regex feature: lookaround or inline flags '(?'");
        }
      }
      NodePtr inner = parse_alt();
      if (i_ >= s_.size() || s_[i_] != ')') bad(where_, at, "unbalanced '('");
      ++i_;
      return inner;
    }
    if (c == '[') {
      ++i_;
      return char_node(parse_class(s_, i_, where_), json_);
    }
    if (c == '.') {
      ++i_;
      return char_node(complement({{'\n', '\n'}}), json_);
    }
    if (c == '^' || c == '$') bad(where_, at, "unsupported regex feature: anchor in the middle of the pattern");
    if (c == '*' || c == '+' || c == '?') bad(where_, at, "nothing to repeat");
    if (c == '\\') {
      ++i_;
      if (i_ >= s_.size()) bad(where_, at, "trailing backslash");
      return char_node(parse_escape(s_, i_, where_, false), json_);
    }
    const uint32_t cp = next_code_point(s_, i_, where_);
    return char_node({{cp, cp}}, json_);
  }

  std::string_view s_;
  size_t i_ = 0;
  bool json_;
  std::string_view where_;
};

}  // namespace

uint32_t next_code_point(std::string_view s, size_t& i, std::string_view where) {
  const unsigned char c = uint8_t(s[i]);
  int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
  if (n < 0) bad(where, i, "invalid UTF-8");
  uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
  const size_t at = i++;
  for (int k = 0; k < n; ++k) {
    if (i >= s.size() || (uint8_t(s[i]) & 0xC0) != 0x80) bad(where, at, "invalid UTF-8");
    cp = (cp << 6) | (uint8_t(s[i++]) & 0x3F);
  }
  return cp;
}

CodeRanges parse_escape(std::string_view s, size_t& i, std::string_view where, bool in_class) {
  const size_t at = i - 1;
  const char c = s[i++];
  switch (c) {
    case 'd': return kDigit;
    case 'D': return complement(kDigit);
    case 'w': return kWord;
    case 'W': return complement(kWord);
    case 's': return kSpace;
    case 'S': return complement(kSpace);
    case 'n': return {{'\n', '\n'}};
    case 't': return {{'\t', '\t'}};
    case 'r': return {{'\r', '\r'}};
    case 'f': return {{'\f', '\f'}};
    case 'v': return {{'\v', '\v'}};
    case '0': return {{0, 0}};
    case 'x': {
      const uint32_t v = read_hex(s, i, 2, where);
      return {{v, v}};
    }
    case 'u': {
      uint32_t v;
      if (i < s.size() && s[i] == '{') {
        ++i;
        v = 0;
        size_t n = 0;
        while (i < s.size() && s[i] != '}') {
          if (hexval(s[i]) < 0 || ++n > 6) bad(where, at, "bad \\u{...} escape");
          v = v * 16 + uint32_t(hexval(s[i++]));
        }
        if (i >= s.size()) bad(where, at, "unterminated \\u{...} escape");
        ++i;
      } else {
        v = read_hex(s, i, 4, where);
      }
      if (v > kMaxCodePoint) bad(where, at, "code point above U+10FFFF");
      return {{v, v}};
    }
    case 'b':
      if (in_class) return {{'\b', '\b'}};
      bad(where, at, "unsupported regex feature: word boundary \\b");
    case 'B': bad(where, at, "unsupported regex feature: \\B");
    case 'A': case 'Z': case 'z': case 'G':
      bad(where, at, std::string("unsupported regex feature: anchor \\") + c);
    default:
      if (c >= '1' && c <= '9') bad(where, at, "unsupported regex feature: backreference");
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        bad(where, at, std::string("unsupported regex escape \\") + c);
      }
      --i;
      {
        const uint32_t cp = next_code_point(s, i, where);
        return {{cp, cp}};
      }
  }
}

CodeRanges parse_class(std::string_view s, size_t& i, std::string_view where) {
  const size_t at = i - 1;
  bool neg = false;
  if (i < s.size() && s[i] == '^') {
    neg = true;
    ++i;
  }
  CodeRanges r;
  bool first = true;
  for (;;) {
    if (i >= s.size()) bad(where, at, "unterminated character class '['");
    if (s[i] == ']' && !first) {
      ++i;
      break;
    }
    first = false;
    CodeRanges item;
    bool single = false;
    uint32_t lo = 0;
    if (s[i] == '\\') {
      ++i;
      if (i >= s.size()) bad(where, at, "trailing backslash");
      item = parse_escape(s, i, where, true);
    } else if (s[i] == '[' && i + 1 < s.size() && s[i + 1] == ':') {
      bad(where, i, "unsupported regex feature: POSIX class [:name:]");
    } else {
      const uint32_t cp = next_code_point(s, i, where);
      item = {{cp, cp}};
    }
    single = item.size() == 1 && item[0].first == item[0].second;
    lo = single ? item[0].first : 0;
    if (single && i + 1 < s.size() && s[i] == '-' && s[i + 1] != ']') {
      ++i;
      uint32_t hi;
      if (s[i] == '\\') {
        ++i;
        if (i >= s.size()) bad(where, at, "trailing backslash");
        CodeRanges h = parse_escape(s, i, where, true);
        if (h.size() != 1 || h[0].first != h[0].second) bad(where, i, "bad range end in character class");
        hi = h[0].first;
      } else {
        hi = next_code_point(s, i, where);
      }
      if (hi < lo) bad(where, at, "bad character range (end before start)");
      item = {{lo, hi}};
    }
    r.insert(r.end(), item.begin(), item.end());
  }
  r = normalise(r);
  return neg ? complement(r) : r;
}

NodePtr json_char(const CodeRanges& r) {
  std::vector<NodePtr> parts{utf8_class(subtract(r, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}))};
  if (contains(r, '"')) parts.push_back(literal("\\\""));
  if (contains(r, '\\')) parts.push_back(literal("\\\\"));
  static const std::pair<uint32_t, const char*> kEsc[] = {
      {'\n', "\\n"}, {'\t', "\\t"}, {'\r', "\\r"}, {'\b', "\\b"}, {'\f', "\\f"}};
  for (uint32_t c = 0; c < 0x20; ++c) {
    if (!contains(r, c)) continue;
    const char* e = nullptr;
    for (const auto& [k, v] : kEsc)
      if (k == c) e = v;
    if (e) {
      parts.push_back(literal(e));
    } else {
      static const char* hex = "0123456789abcdef";
      parts.push_back(literal(std::string("\\u00") + hex[c >> 4] + hex[c & 15]));
    }
  }
  return alt(std::move(parts));
}

NodePtr char_node(const CodeRanges& r, bool json_string) { return json_string ? json_char(r) : utf8_class(r); }

NodePtr parse_regex(std::string_view pattern, bool json_string, std::string_view where) {
  return RegexParser(pattern, json_string, where).parse();
}

}  // namespace qinfer::grammar
