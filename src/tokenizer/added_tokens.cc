#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace qinfer::tok {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : tokens_(tokens) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(static_cast<int>(i));
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(),
                     [&](int a, int b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
  }
}

std::optional<AddedTokenMatcher::Match> AddedTokenMatcher::find(std::string_view text, size_t from,
                                                                 bool include_special) const {
  for (size_t i = from; i < text.size(); ++i) {
    for (int k : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const AddedToken& t = tokens_[k];
      if (t.special && !include_special) continue;
      if (text.compare(i, t.content.size(), t.content) == 0) return Match{i, t.content.size(), t.id};
    }
  }
  return std::nullopt;
}

}  // namespace qinfer::tok
