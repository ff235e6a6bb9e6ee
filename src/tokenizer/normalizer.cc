#include "tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uniset.h>

#include "util/error.h"

namespace qinfer::tok {
namespace {

// Hugging Face's NFC (the Rust crate unicode-normalization-alignments) is built on Unicode 9.0
// data: a code point assigned later has class 0, no decomposition and composes with nothing.
// ICU's NFC restricted to the code points assigned by Unicode 9.0 (a FilteredNormalizer2 over
// [:age=9.0:], the way ICU itself offers Unicode 3.2 normalisation for IDNA) is exactly that:
// later code points pass through untouched and end any run, as a class-0 starter would. Data
// of characters assigned by 9.0 is stable across versions (normalisation stability policy).
const icu::Normalizer2& nfc_instance() {
  static const icu::Normalizer2* n = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* inst = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status) || inst == nullptr) fail("tokenizer: ICU NFC normaliser unavailable: ", u_errorName(status));
    auto* set = new icu::UnicodeSet(icu::UnicodeString(u"[:age=9.0:]"), status);
    if (U_FAILURE(status)) fail("tokenizer: ICU Unicode 9.0 code point set unavailable: ", u_errorName(status));
    set->freeze();
    return static_cast<const icu::Normalizer2*>(new icu::FilteredNormalizer2(*inst, *set));
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
