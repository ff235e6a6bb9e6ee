// tokenizer.json (and an optional tokenizer_config.json after a "\n---tokenizer_config---\n"
// line) loaded by Tokenizer::load from a model folder; a tokenizer that loads then encodes
// and decodes a fixed text, its own tokens and every id around the vocabulary's edges.
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace f = qinfer::fuzz;
  const auto [tok_text, config_text] = f::split_at(f::as_text(data, size), "\n---tokenizer_config---\n");
  f::write_scratch("tokenizer.json", tok_text);
  const std::string config_path = f::scratch_dir() + "/tokenizer_config.json";
  if (config_text.empty()) std::remove(config_path.c_str());
  else f::write_scratch("tokenizer_config.json", config_text);
  try {
    const qinfer::Tokenizer t = qinfer::Tokenizer::load(f::scratch_dir());
    const std::vector<int> ids = t.encode("Hello world! <|im_start|>user\n123 héllo 😀<think>\n</think>");
    (void)t.decode(ids);
    std::vector<int> edge = {-1, 0, 1, t.vocab_size() - 1, t.vocab_size(), t.vocab_size() + 1};
    for (const auto& a : t.added_tokens()) edge.push_back(a.id);
    for (int id : edge) {
      try {
        (void)t.decode({id}, id % 2 == 0);
      } catch (const qinfer::Error&) {
      }
      const std::string s = t.token_text(id);
      (void)t.is_special(id);
      (void)t.token_id(s);
    }
  } catch (const qinfer::Error&) {
  }
  return 0;
}
