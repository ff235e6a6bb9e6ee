#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <cstring>

namespace qinfer::tok {

void AddedTokenMatcher::build(const std::vector<AddedToken>& tokens) {
  tokens_ = &tokens;
  by_length_.clear();
  first_byte_.fill(false);
  for (const AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    by_length_.push_back(&t);
    first_byte_[static_cast<uint8_t>(t.content[0])] = true;
  }
  std::stable_sort(by_length_.begin(), by_length_.end(),
                   [](const AddedToken* a, const AddedToken* b) { return a->content.size() > b->content.size(); });
}

bool AddedTokenMatcher::find(std::string_view text, size_t from, bool include_special, size_t* pos,
                             const AddedToken** tok) const {
  for (size_t i = from; i < text.size(); ++i) {
    if (!first_byte_[static_cast<uint8_t>(text[i])]) continue;
    const size_t left = text.size() - i;
    for (const AddedToken* t : by_length_) {
      if (t->special && !include_special) continue;
      if (t->content.size() <= left && std::memcmp(text.data() + i, t->content.data(), t->content.size()) == 0) {
        *pos = i;
        *tok = t;
        return true;
      }
    }
  }
  return false;
}

}  // namespace qinfer::tok
