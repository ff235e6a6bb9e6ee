#include "tokenizer/utf8.h"

namespace qinfer::tok {

namespace {
// Allowed range of the second byte for each lead byte (Unicode Table 3-7);
// later continuation bytes are always 0x80..0xBF.
struct LeadInfo {
  uint8_t len;
  uint8_t lo, hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}
}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i, size_t* valid_prefix) {
  const uint8_t b = static_cast<uint8_t>(s[i]);
  const LeadInfo info = lead_info(b);
  if (info.len == 0) {
    if (valid_prefix) *valid_prefix = 1;
    return 0;
  }
  if (info.len == 1) {
    if (valid_prefix) *valid_prefix = 1;
    return 1;
  }
  size_t k = 1;
  for (; k < info.len; ++k) {
    if (i + k >= s.size()) {
      if (valid_prefix) *valid_prefix = k;
      return 0;
    }
    const uint8_t c = static_cast<uint8_t>(s[i + k]);
    const uint8_t lo = k == 1 ? info.lo : 0x80, hi = k == 1 ? info.hi : 0xBF;
    if (c < lo || c > hi) {
      if (valid_prefix) *valid_prefix = k;
      return 0;
    }
  }
  if (valid_prefix) *valid_prefix = k;
  return info.len;
}

uint32_t utf8_decode(std::string_view s, size_t i, size_t len) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data() + i);
  switch (len) {
    case 1: return p[0];
    case 2: return (uint32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3: return (uint32_t(p[0] & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    default:
      return (uint32_t(p[0] & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) |
             (uint32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
  }
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool utf8_is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8_sequence_length(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

size_t utf8_append_lossy(std::string& out, std::string_view s, bool hold_incomplete) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";
  size_t i = 0, run = 0;  // [run, i) is well-formed and not yet copied
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t prefix = 0;
    const size_t len = utf8_sequence_length(s, i, &prefix);
    if (len != 0) {
      i += len;
      continue;
    }
    out.append(s.data() + run, i - run);
    if (i + prefix == s.size() && hold_incomplete && lead_info(static_cast<uint8_t>(s[i])).len != 0) {
      return prefix;  // cut short by the end: the caller keeps these bytes
    }
    out += kReplacement;
    i += prefix;
    run = i;
  }
  out.append(s.data() + run, i - run);
  return 0;
}

}  // namespace qinfer::tok
