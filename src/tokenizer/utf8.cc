#include "tokenizer/utf8.h"

namespace qinfer::tok {

Utf8Step utf8_step(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return {Utf8Step::kOk, 1, c};
  int need;
  uint32_t cp;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2, cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3, cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Utf8Step::kInvalid, 1, 0};
  }
  for (int k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return {Utf8Step::kTruncated, k, 0};
    const uint8_t t = b(i + k);
    const uint8_t tlo = k == 1 ? lo : 0x80, thi = k == 1 ? hi : 0xBF;
    if (t < tlo || t > thi) return {Utf8Step::kInvalid, k, 0};
    cp = (cp << 6) | (t & 0x3F);
  }
  return {Utf8Step::kOk, need + 1, cp};
}

std::optional<size_t> utf8_first_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step st = utf8_step(s, i);
    if (st.status != Utf8Step::kOk) return i;
    i += st.len;
  }
  return std::nullopt;
}

void append_utf8_lossy(std::string& out, std::string_view s) {
  size_t i = 0, run = 0;  // [run, i) is valid and not yet copied
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step st = utf8_step(s, i);
    if (st.status == Utf8Step::kOk) {
      i += st.len;
      continue;
    }
    out.append(s.substr(run, i - run));
    out.append("\xEF\xBF\xBD");
    i += st.len;
    run = i;
  }
  out.append(s.substr(run));
}

size_t utf8_incomplete_tail(std::string_view s) {
  // A sequence is at most 4 bytes, so only a lead byte among the last 3 can start a tail.
  // Lead bytes (C2..F4) never occur inside another sequence, so the first one found decides.
  const size_t from = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t i = from; i < s.size(); ++i) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (c < 0xC2 || c > 0xF4) continue;
    if (utf8_step(s, i).status == Utf8Step::kTruncated) return s.size() - i;
  }
  return 0;
}

void append_utf8(std::string& out, uint32_t cp) {
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

}  // namespace qinfer::tok
