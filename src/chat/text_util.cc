#include "chat/text_util.h"

#include <algorithm>
#include <cstdint>

namespace qinfer::chat {

namespace {

bool is_py_space_cp(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Decodes the (assumed well-formed) UTF-8 sequence at s[i]; returns its length, 0 if broken.
size_t decode(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n;
  if (b < 0x80) {
    cp = b;
    return 1;
  } else if ((b & 0xE0) == 0xC0) {
    n = 2;
    cp = b & 0x1F;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3;
    cp = b & 0x0F;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4;
    cp = b & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  return n;
}

}  // namespace

size_t py_space_len(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  uint32_t cp = 0;
  const size_t n = decode(s, i, cp);
  return n && is_py_space_cp(cp) ? n : 0;
}

size_t py_space_len_before(std::string_view s, size_t end) {
  // Step back over continuation bytes to the start of the last code point (at most 4 bytes).
  for (size_t n = 1; n <= 4 && n <= end; ++n) {
    const auto c = static_cast<unsigned char>(s[end - n]);
    if ((c & 0xC0) == 0x80) continue;
    return py_space_len(s.substr(0, end), end - n) == n ? n : 0;
  }
  return 0;
}

size_t incomplete_utf8_tail(std::string_view s) {
  for (size_t n = 1; n <= 3 && n <= s.size(); ++n) {
    const auto c = static_cast<unsigned char>(s[s.size() - n]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    const size_t want = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return want > n ? n : 0;
  }
  return 0;
}

void append_whole_characters(std::string& held, std::string_view delta, std::string& out) {
  held.append(delta);
  const size_t keep = incomplete_utf8_tail(held);
  out.append(held, 0, held.size() - keep);
  held.erase(0, held.size() - keep);
}

std::string_view py_lstrip(std::string_view s) {
  size_t i = 0;
  while (size_t n = py_space_len(s, i)) i += n;
  return s.substr(i);
}

std::string_view py_rstrip(std::string_view s) {
  size_t end = s.size();
  while (size_t n = py_space_len_before(s, end)) end -= n;
  return s.substr(0, end);
}

size_t partial_tag_overlap(std::string_view text, std::string_view tag) {
  if (tag.empty()) return 0;
  for (size_t k = std::min(tag.size() - 1, text.size()); k > 0; --k)
    if (text.substr(text.size() - k) == tag.substr(0, k)) return k;
  return 0;
}

size_t find_in(std::string_view hay, std::string_view needle, size_t from, size_t limit) {
  if (limit > hay.size()) limit = hay.size();
  if (from > limit) return std::string_view::npos;
  const size_t pos = hay.substr(0, limit).find(needle, from);
  return pos;
}

int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool read_hex(std::string_view s, size_t i, size_t n, uint32_t& out) {
  if (i + n > s.size()) return false;
  out = 0;
  for (size_t k = 0; k < n; ++k) {
    const int h = hex_val(s[i + k]);
    if (h < 0) return false;
    out = out * 16 + uint32_t(h);
  }
  return true;
}

}  // namespace qinfer::chat
