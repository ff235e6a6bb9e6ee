#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace qinfer {

void Tokenizer::Impl::add_token(int id, std::string_view bytes, Kind k, bool is_special) {
  store.set(id, bytes);
  kind.resize(store.size(), kNone);
  special.resize(store.size(), 0);
  kind[id] = k;
  special[id] = is_special;
}

void Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int>& out) const {
  if (text.empty()) return;
  thread_local std::string normalized;
  thread_local std::vector<std::string_view> words;
  if (nfc) {
    normalized.clear();
    tok::append_nfc(normalized, text);
    text = normalized;
  }
  words.clear();
  if (splitter) {
    splitter->split(text, words);
  } else {
    words.push_back(text);
  }
  for (std::string_view w : words) {
    if (ignore_merges) {
      if (auto id = store.find(w); id && kind[*id] == kVocab) {
        out.push_back(*id);
        continue;
      }
    }
    bpe->encode_word(w, out);
  }
}

void Tokenizer::Impl::append_bytes(int id, bool skip_special, std::string& out) const {
  if (!valid(id)) fail("tokenizer: token id ", id, " is not in the vocabulary (", kind.size(), " ids)");
  if (skip_special && special[id]) return;
  out += store.bytes(id);
}

std::vector<int> Tokenizer::encode(std::string_view text, bool parse_special) const {
  if (auto bad = tok::utf8_first_invalid(text)) fail("tokenizer: encode: text is not valid UTF-8 at byte ", *bad);
  std::vector<int> out;
  out.reserve(text.size() / 3 + 4);
  size_t pos = 0;
  while (pos < text.size()) {
    const auto m = impl_->matcher->find(text, pos, parse_special);
    const size_t end = m ? m->start : text.size();
    impl_->encode_plain(text.substr(pos, end - pos), out);
    if (!m) break;
    out.push_back(m->id);
    pos = m->start + m->len;
  }
  return out;
}

namespace {

bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// The first cut at or after `from` in `text` where encoding the two sides apart gives the
// tokens of encoding them together (see encode_bounded); text.size() if there is none.
size_t next_safe_cut(std::string_view text, size_t from) {
  for (size_t i = std::max<size_t>(from, 1); i + 1 < text.size(); ++i) {
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if (text[i] == '\n' && next > 0x20 && (next < 0x80 || next >= 0xC0)) return i + 1;  // a character starts
    if (text[i] == ' ' && ascii_letter(text[i + 1]) && !ascii_space(text[i - 1]) &&
        static_cast<unsigned char>(text[i - 1]) < 0x80) {
      return i;
    }
  }
  return text.size();
}

}  // namespace

std::vector<int> Tokenizer::encode_bounded(std::string_view text, bool parse_special, size_t max_tokens,
                                           size_t* bytes_read, size_t piece_bytes) const {
  if (auto bad = tok::utf8_first_invalid(text)) fail("tokenizer: encode: text is not valid UTF-8 at byte ", *bad);
  std::vector<int> out;
  piece_bytes = std::max<size_t>(piece_bytes, 1);
  size_t pos = 0;
  while (pos < text.size() && out.size() <= max_tokens) {
    const auto m = impl_->matcher->find(text, pos, parse_special);
    const size_t end = m ? m->start : text.size();
    while (pos < end && out.size() <= max_tokens) {
      const size_t cut = std::min(end, next_safe_cut(text.substr(0, end), pos + piece_bytes));
      impl_->encode_plain(text.substr(pos, cut - pos), out);
      pos = cut;
    }
    if (!m || out.size() > max_tokens) break;
    out.push_back(m->id);
    pos = m->start + m->len;
  }
  if (bytes_read) *bytes_read = pos;
  return out;
}

std::string Tokenizer::decode(const std::vector<int>& ids, bool skip_special) const {
  std::string bytes;
  for (int id : ids) impl_->append_bytes(id, skip_special, bytes);
  if (!tok::utf8_first_invalid(bytes)) return bytes;
  std::string out;
  tok::append_utf8_lossy(out, bytes);
  return out;
}

std::string Tokenizer::token_text(int id) const {
  return impl_->valid(id) ? std::string(impl_->store.bytes(id)) : std::string();
}

std::optional<int> Tokenizer::token_id(std::string_view token) const { return impl_->store.find(token); }

bool Tokenizer::is_special(int id) const { return impl_->valid(id) && impl_->special[id]; }

int Tokenizer::vocab_size() const { return static_cast<int>(impl_->kind.size()); }

const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : impl_(tokenizer.impl_), skip_special_(skip_special) {}

std::string StreamDecoder::push(int id) {
  impl_->append_bytes(id, skip_special_, pending_);
  const size_t keep = tok::utf8_incomplete_tail(pending_);
  std::string out;
  tok::append_utf8_lossy(out, std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  tok::append_utf8_lossy(out, pending_);
  pending_.clear();
  return out;
}

}  // namespace qinfer
