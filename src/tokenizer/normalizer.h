// Unicode NFC normalisation of UTF-8 text (ICU Normalizer2), the normaliser of the Qwen
// tokenizer.json, on Unicode 9.0 data as Hugging Face's tokenizers crate has it: marks and
// compositions added in Unicode 10 and later are left alone. Input must be valid UTF-8.
#pragma once
#include <string>
#include <string_view>

namespace qinfer::tok {

// Appends the NFC form of text to out. Pure ASCII and already-normalised text are copied.
void append_nfc(std::string& out, std::string_view text);

std::string nfc(std::string_view text);

}  // namespace qinfer::tok
