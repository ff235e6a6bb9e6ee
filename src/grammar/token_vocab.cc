#include "grammar/token_vocab.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace qinfer::grammar {

TokenVocab::TokenVocab(std::vector<std::string> bytes, const std::vector<bool>& excluded)
    : bytes_(std::move(bytes)) {
  usable_.assign(bytes_.size(), 0);
  for (size_t i = 0; i < bytes_.size(); ++i) {
    const bool ex = i < excluded.size() && excluded[i];
    if (!ex && !bytes_[i].empty() && bytes_[i].size() < 65535) {
      usable_[i] = 1;
      order_.push_back(int32_t(i));
      max_len_ = std::max(max_len_, bytes_[i].size());
    }
  }
  std::sort(order_.begin(), order_.end(),
            [&](int32_t a, int32_t b) { return bytes_[size_t(a)] < bytes_[size_t(b)]; });
  sorted_off_.push_back(0);
  for (int32_t id : order_) {
    sorted_ += bytes_[size_t(id)];
    sorted_off_.push_back(uint32_t(sorted_.size()));
  }
  lcp_.assign(order_.size(), 0);
  for (size_t i = 1; i < order_.size(); ++i) {
    const std::string& a = bytes_[size_t(order_[i - 1])];
    const std::string& b = bytes_[size_t(order_[i])];
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    lcp_[i] = uint16_t(n);
  }
}

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(const Tokenizer& tok) {
  const int n = tok.vocab_size();
  std::vector<std::string> bytes(size_t(std::max(n, 0)));
  std::vector<bool> excluded(bytes.size(), false);
  for (int i = 0; i < n; ++i) bytes[size_t(i)] = tok.token_text(i);
  for (const auto& t : tok.added_tokens()) {
    if (t.id >= 0 && t.id < n) excluded[size_t(t.id)] = true;
  }
  return std::make_shared<const TokenVocab>(std::move(bytes), excluded);
}

}  // namespace qinfer::grammar
