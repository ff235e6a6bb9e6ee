#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace qinfer::tok {

namespace {
struct Tables {
  std::array<uint32_t, 256> to_unicode{};
  std::array<int16_t, 512> to_byte{};  // stand-ins are all below U+0200
  Tables() {
    to_byte.fill(-1);
    uint32_t extra = 256;
    for (int b = 0; b < 256; ++b) {
      const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_unicode[b] = self ? uint32_t(b) : extra++;
      to_byte[to_unicode[b]] = static_cast<int16_t>(b);
    }
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}
}  // namespace

uint32_t byte_to_unicode(uint8_t b) { return tables().to_unicode[b]; }

bool byte_level_decode(std::string_view s, std::string& out) {
  const Tables& t = tables();
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence_length(s, i);
    if (len == 0) return false;
    const uint32_t cp = utf8_decode(s, i, len);
    if (cp >= t.to_byte.size() || t.to_byte[cp] < 0) return false;
    out += static_cast<char>(t.to_byte[cp]);
    i += len;
  }
  return true;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  for (char c : bytes) utf8_append(out, byte_to_unicode(static_cast<uint8_t>(c)));
  return out;
}

}  // namespace qinfer::tok
