#include "util/py_escape.h"

#include <cstdio>

namespace qinfer {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

EscapeResult py_decode_escape(std::string_view s, size_t& i, std::string& out,
                              void (*append_cp)(std::string& out, uint32_t cp)) {
  const char e = s[i];
  switch (e) {
    case '\n': ++i; return EscapeResult::kOk;
    case '\\': case '\'': case '"': out += e; ++i; return EscapeResult::kOk;
    case 'a': out += '\a'; ++i; return EscapeResult::kOk;
    case 'b': out += '\b'; ++i; return EscapeResult::kOk;
    case 'f': out += '\f'; ++i; return EscapeResult::kOk;
    case 'n': out += '\n'; ++i; return EscapeResult::kOk;
    case 'r': out += '\r'; ++i; return EscapeResult::kOk;
    case 't': out += '\t'; ++i; return EscapeResult::kOk;
    case 'v': out += '\v'; ++i; return EscapeResult::kOk;
    case 'x': case 'u': case 'U': {
      const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      if (i + 1 + n > s.size()) return EscapeResult::kTruncated;
      uint32_t cp = 0;
      for (size_t k = 1; k <= n; ++k) {
        const char c = s[i + k];
        const int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (h < 0) return EscapeResult::kTruncated;
        cp = cp * 16 + static_cast<uint32_t>(h);
      }
      if (cp > 0x10FFFF) return EscapeResult::kIllegal;
      append_cp(out, cp);
      i += 1 + n;
      return EscapeResult::kOk;
    }
    default:
      if (e >= '0' && e <= '7') {
        uint32_t cp = static_cast<uint32_t>(e - '0');
        ++i;
        for (int k = 0; k < 2 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++k) cp = cp * 8 + uint32_t(s[i++] - '0');
        append_cp(out, cp);
      } else {
        out += '\\';
        out += e;
        ++i;
      }
      return EscapeResult::kOk;
  }
}

void json_escape_byte(std::string& out, char ch) {
  switch (ch) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    default: break;
  }
  const auto c = static_cast<unsigned char>(ch);
  if (c < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    out += buf;
  } else {
    out += ch;
  }
}

}  // namespace qinfer
