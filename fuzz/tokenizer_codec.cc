// Tokenizer::encode / decode / StreamDecoder on the repository's Qwen3.5 tokenizer
// (assets/tokenizer/qwen3.5): the input is encoded as text (with and without special-token
// parsing) and read as little-endian 32-bit ids to decode. The streamed decode must equal
// decode() (tokenizer.h), and the encoded ids of a text must decode without error.
#include <cstring>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {
const qinfer::Tokenizer& tokenizer() {
  static const qinfer::Tokenizer t = qinfer::Tokenizer::load(QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5");
  return t;
}

std::string streamed(const qinfer::Tokenizer& t, const std::vector<int>& ids, bool skip) {
  qinfer::StreamDecoder d(t, skip);
  std::string s;
  for (int id : ids) s += d.push(id);
  return s + d.flush();
}
}  // namespace

// Loaded once before fuzzing starts, so the per-input timeout does not count the set-up.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const qinfer::Tokenizer& t = tokenizer();
  const std::string_view text = qinfer::fuzz::as_text(data, size);
  for (bool special : {true, false}) {
    try {
      const std::vector<int> ids = t.encode(text, special);
      for (bool skip : {false, true})
        if (t.decode(ids, skip) != streamed(t, ids, skip)) __builtin_trap();
    } catch (const qinfer::Error&) {  // invalid UTF-8
    }
  }
  std::vector<int> ids(size / 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    uint32_t v;
    std::memcpy(&v, data + 4 * i, 4);
    // Mostly ids near the vocabulary (and its edges), sometimes any int.
    ids[i] = (v >> 31) ? static_cast<int>(v) : static_cast<int>(v % (t.vocab_size() + 16)) - 8;
  }
  for (bool skip : {false, true}) {
    std::string whole;
    bool ok = true;
    try {
      whole = t.decode(ids, skip);
    } catch (const qinfer::Error&) {
      ok = false;
    }
    try {
      const std::string s = streamed(t, ids, skip);
      if (!ok || s != whole) __builtin_trap();
    } catch (const qinfer::Error&) {
      if (ok) __builtin_trap();
    }
  }
  return 0;
}
