#include "engine/text_output.h"

#include <optional>

#include "sampling/stop_checker.h"
#include "tokenizer/tokenizer.h"

namespace qinfer::engine {

struct TextOutput::Impl {
  std::optional<StreamDecoder> decoder;
  sampling::StopChecker stop;
  int tok_vocab = 0;
  Impl(const Tokenizer* t, bool skip_special, const std::vector<std::string>& s, bool include)
      : stop(s, include) {
    if (t) {
      decoder.emplace(*t, skip_special);
      tok_vocab = t->vocab_size();
    }
  }
};

TextOutput::TextOutput(const Tokenizer* tokenizer, bool skip_special, const std::vector<std::string>& stop,
                       bool include_stop_str)
    : impl_(std::make_unique<Impl>(tokenizer, skip_special, stop, include_stop_str)) {}

TextOutput::~TextOutput() = default;

std::string TextOutput::push(int token, bool* stopped, std::string* stop_str) {
  *stopped = false;
  if (!impl_->decoder) return {};
  // Ids the tokenizer does not know (a model vocabulary larger than the tokenizer's) decode as "".
  if (token < 0 || token >= impl_->tok_vocab) return {};
  std::string piece = impl_->decoder->push(token);
  if (impl_->stop.empty()) return piece;
  auto u = impl_->stop.push(piece);
  if (u.stopped) {
    *stopped = true;
    *stop_str = u.stop_str;
  }
  return u.text;
}

std::string TextOutput::flush() {
  if (!impl_->decoder) return {};
  std::string rest = impl_->decoder->flush();
  if (impl_->stop.empty()) return rest;
  if (impl_->stop.stopped()) return {};
  auto u = impl_->stop.push(rest);
  return u.text + impl_->stop.finish();
}

}  // namespace qinfer::engine
