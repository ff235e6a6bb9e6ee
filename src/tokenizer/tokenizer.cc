// Tokenizer encode/decode and StreamDecoder.
#include "tokenizer/tokenizer.h"

#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer_data.h"
#include "tokenizer/utf8.h"

namespace qinfer {

namespace {

using tok::TokenizerData;

constexpr size_t kMaxCachedPiece = 128;      // bytes; longer pieces are rarely repeated
constexpr size_t kMaxCacheEntries = 1 << 18;  // cleared when full

void encode_piece(const TokenizerData& d, std::string_view piece, std::vector<int>& out) {
  const bool cacheable = piece.size() <= kMaxCachedPiece;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(d.cache_mu);
    auto it = d.cache.find(piece);
    if (it != d.cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  tok::bpe_encode_word(piece, d.byte_ids, d.merges, out);
  if (cacheable) {
    std::vector<int> ids(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
    std::lock_guard<std::mutex> lock(d.cache_mu);
    if (d.cache.size() >= kMaxCacheEntries) d.cache.clear();
    d.cache.emplace(std::string(piece), std::move(ids));
  }
}

// Normalises, pre-tokenises and BPE-encodes text that holds no added token.
void encode_plain(const TokenizerData& d, std::string_view text, std::vector<int>& out) {
  if (text.empty()) return;
  const std::string normalized = tok::nfc(text);
  thread_local std::vector<tok::Piece> pieces;
  tok::pretokenize(normalized, d.kind, pieces);
  const std::string_view view(normalized);
  for (const tok::Piece& p : pieces) encode_piece(d, view.substr(p.begin, p.end - p.begin), out);
}

}  // namespace

std::vector<int> Tokenizer::encode(std::string_view text, bool parse_special) const {
  const TokenizerData& d = *data_;
  std::string repaired;
  if (!tok::utf8_is_valid(text)) {
    tok::utf8_append_lossy(repaired, text, /*hold_incomplete=*/false);
    text = repaired;
  }
  std::vector<int> out;
  out.reserve(text.size() / 3 + 4);
  size_t pos = 0, at = 0;
  const tok::AddedToken* added = nullptr;
  while (d.matcher.find(text, pos, parse_special, &at, &added)) {
    encode_plain(d, text.substr(pos, at - pos), out);
    out.push_back(added->id);
    pos = at + added->content.size();
  }
  encode_plain(d, text.substr(pos), out);
  return out;
}

std::string Tokenizer::decode(const std::vector<int>& ids, bool skip_special) const {
  const TokenizerData& d = *data_;
  std::string bytes;
  for (int id : ids) {
    if (id < 0 || id >= d.vocab_size() || !d.known[id]) continue;
    if (skip_special && d.special[id]) continue;
    bytes += d.token_bytes(id);
  }
  if (tok::utf8_is_valid(bytes)) return bytes;
  std::string out;
  tok::utf8_append_lossy(out, bytes, /*hold_incomplete=*/false);
  return out;
}

std::string Tokenizer::token_text(int id) const {
  const TokenizerData& d = *data_;
  if (id < 0 || id >= d.vocab_size() || !d.known[id]) return {};
  return std::string(d.token_bytes(id));
}

std::optional<int> Tokenizer::token_id(std::string_view token) const {
  const int id = data_->ids.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

bool Tokenizer::is_special(int id) const {
  return id >= 0 && id < data_->vocab_size() && data_->special[id];
}

bool Tokenizer::is_added(int id) const {
  return id >= 0 && id < data_->vocab_size() && data_->added[id];
}

int Tokenizer::vocab_size() const { return data_->vocab_size(); }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(&tokenizer), skip_special_(skip_special) {}

std::string StreamDecoder::push(int id) {
  const TokenizerData& d = tokenizer_->data();
  if (id < 0 || id >= d.vocab_size() || !d.known[id]) return {};
  if (skip_special_ && d.special[id]) return {};
  pending_ += d.token_bytes(id);
  std::string out;
  const size_t held = tok::utf8_append_lossy(out, pending_, /*hold_incomplete=*/true);
  pending_.erase(0, pending_.size() - held);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  tok::utf8_append_lossy(out, pending_, /*hold_incomplete=*/false);
  pending_.clear();
  return out;
}

}  // namespace qinfer
