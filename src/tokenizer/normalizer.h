// Unicode NFC normalisation of UTF-8 text (ICU Normalizer2), the normaliser of the Qwen
// tokenizer.json. Input must be valid UTF-8.
#pragma once
#include <string>
#include <string_view>

namespace qinfer::tok {

// Appends the NFC form of text to out. Pure ASCII and already-normalised text are copied.
void append_nfc(std::string& out, std::string_view text);

std::string nfc(std::string_view text);

}  // namespace qinfer::tok
