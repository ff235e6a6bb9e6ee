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

size_t Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int>& out, size_t max_tokens,
                                     size_t* bpe_bytes) const {
  if (text.empty()) return 0;
  thread_local std::string normalized;
  thread_local std::vector<std::string_view> words;
  if (nfc) {
    normalized.clear();
    tok::append_nfc(normalized, text);
    text = normalized;
  }
  const size_t before = out.size();
  size_t left = text.size();  // bytes not yet encoded
  const auto over = [&]() -> size_t {
    if (max_tokens == SIZE_MAX) return 0;
    const size_t at_least = out.size() + min_tokens(left);
    if (at_least <= max_tokens) return 0;
    out.resize(before);
    return at_least;
  };
  if (const size_t n = over()) return n;
  words.clear();
  if (splitter) {
    splitter->split(text, words);
  } else {
    words.push_back(text);
  }
  for (std::string_view w : words) {
    if (const size_t n = over()) return n;
    left -= w.size();
    if (ignore_merges) {
      if (auto id = store.find(w); id && kind[*id] == kVocab) {
        out.push_back(*id);
        continue;
      }
    }
    bpe->encode_word(w, out);
    if (bpe_bytes) *bpe_bytes += w.size();
  }
  return 0;
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

Tokenizer::Bounded Tokenizer::encode_bounded(std::string_view text, bool parse_special, size_t max_tokens,
                                             size_t piece_bytes) const {
  if (auto bad = tok::utf8_first_invalid(text)) fail("tokenizer: encode: text is not valid UTF-8 at byte ", *bad);
  const Impl& t = *impl_;
  Bounded r;
  std::vector<int>& out = r.ids;
  piece_bytes = std::max<size_t>(piece_bytes, 1);
  size_t pos = 0, at_least = 0;  // at_least: a lower bound of the tokens, once it passed max_tokens
  while (pos < text.size() && out.size() <= max_tokens) {
    // Without NFC every byte left is encoded as it is, added tokens included (each at most
    // max_token_bytes long), so the bytes left bound the tokens left.
    if (!t.nfc && max_tokens != SIZE_MAX && out.size() + t.min_tokens(text.size() - pos) > max_tokens) {
      at_least = out.size() + t.min_tokens(text.size() - pos);
      break;
    }
    const auto m = t.matcher->find(text, pos, parse_special);
    const size_t end = m ? m->start : text.size();
    while (pos < end && out.size() <= max_tokens && at_least == 0) {
      const size_t cut = std::min(end, next_safe_cut(text.substr(0, end), pos + piece_bytes));
      at_least = t.encode_plain(text.substr(pos, cut - pos), out, max_tokens, &r.bpe_bytes);
      if (at_least == 0) pos = cut;
    }
    if (at_least != 0 || !m || out.size() > max_tokens) break;
    out.push_back(m->id);
    pos = m->start + m->len;
  }
  r.bytes_read = pos;
  r.complete = pos == text.size();
  r.tokens = std::max(at_least, out.size());
  return r;
}

size_t Tokenizer::max_token_bytes() const { return impl_->max_token_bytes; }

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
