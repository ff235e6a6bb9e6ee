#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace qinfer::tok {
namespace {

struct Tables {
  std::array<char32_t, 256> to_cp{};
  std::array<int, 0x180> to_byte{};  // every mapped code point is below U+0144
  Tables() {
    to_byte.fill(-1);
    int next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_cp[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      to_byte[to_cp[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_unicode(unsigned char b) { return tables().to_cp[b]; }

bool byte_level_decode_to(std::string_view s, std::string& out) {
  const Tables& t = tables();
  out.clear();
  size_t i = 0;
  while (i < s.size()) {
    const Utf8Step st = utf8_step(s, i);
    if (st.status != Utf8Step::kOk || st.cp >= t.to_byte.size() || t.to_byte[st.cp] < 0) return false;
    out += static_cast<char>(t.to_byte[st.cp]);
    i += st.len;
  }
  return true;
}

std::optional<std::string> byte_level_decode(std::string_view s) {
  std::string out;
  if (!byte_level_decode_to(s, out)) return std::nullopt;
  return out;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(out, byte_to_unicode(b));
  return out;
}

}  // namespace qinfer::tok
