// The vocabulary as the grammar sees it: each token id's bytes, and the ids sorted by bytes
// with the common-prefix length to the previous one, so a token mask is one walk of this
// sorted list (a depth-first walk of the token trie): a token sharing a prefix with the one
// before reuses that prefix's DFA states, and a prefix that died rejects every token below it.
// Added tokens (<|im_end|>, <think>, <tool_call>, ...) are never produced by a grammar; the
// end of a grammar is signalled with the EOS ids instead (Matcher).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer {
class Tokenizer;
}

namespace qinfer::grammar {

class TokenVocab {
 public:
  // bytes[id] is token id's byte string; excluded[id] tokens are never allowed.
  TokenVocab(std::vector<std::string> bytes, const std::vector<bool>& excluded);
  static std::shared_ptr<const TokenVocab> from_tokenizer(const Tokenizer& tok);

  int size() const { return int(bytes_.size()); }
  const std::string& bytes(int id) const { return bytes_[size_t(id)]; }
  bool usable(int id) const { return id >= 0 && id < size() && usable_[size_t(id)]; }
  // Usable ids in byte order, and lcp_[i] = common prefix length of order_[i-1] and order_[i].
  const std::vector<int32_t>& order() const { return order_; }
  const std::vector<uint16_t>& lcp() const { return lcp_; }
  // The bytes of order()[i], stored contiguously in walk order (cache-friendly mask walks).
  std::string_view sorted_bytes(size_t i) const {
    return std::string_view(sorted_.data() + sorted_off_[i], sorted_off_[i + 1] - sorted_off_[i]);
  }
  size_t max_len() const { return max_len_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<uint8_t> usable_;
  std::vector<int32_t> order_;
  std::vector<uint16_t> lcp_;
  std::string sorted_;
  std::vector<uint32_t> sorted_off_;
  size_t max_len_ = 0;
};

}  // namespace qinfer::grammar
