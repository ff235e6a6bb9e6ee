#include "tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include "util/error.h"

namespace qinfer::tok {
namespace {

const icu::Normalizer2& nfc_instance() {
  static const icu::Normalizer2* n = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* inst = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status) || inst == nullptr) fail("tokenizer: ICU NFC normaliser unavailable: ", u_errorName(status));
    return inst;
  }();
  return *n;
}

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

}  // namespace

void append_nfc(std::string& out, std::string_view text) {
  if (is_ascii(text)) {
    out.append(text);
    return;
  }
  const icu::Normalizer2& n = nfc_instance();
  const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  UErrorCode status = U_ZERO_ERROR;
  if (n.isNormalizedUTF8(piece, status) && U_SUCCESS(status)) {
    out.append(text);
    return;
  }
  status = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(text.size()));
  n.normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) fail("tokenizer: NFC normalisation failed: ", u_errorName(status));
}

std::string nfc(std::string_view text) {
  std::string out;
  append_nfc(out, text);
  return out;
}

}  // namespace qinfer::tok
