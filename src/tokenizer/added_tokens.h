// Added tokens (<|im_start|>, <think>, ...) are cut out of the raw text before
// normalisation and BPE: at each position the leftmost, then longest, match wins.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::tok {

struct AddedToken {
  std::string content;
  int id = -1;
  bool special = false;
};

class AddedTokenMatcher {
 public:
  // `tokens` must outlive the matcher.
  void build(const std::vector<AddedToken>& tokens);
  // Finds the first match at or after `from`; returns false when there is none.
  // With `include_special` false only non-special tokens match.
  bool find(std::string_view text, size_t from, bool include_special, size_t* pos, const AddedToken** tok) const;

 private:
  const std::vector<AddedToken>* tokens_ = nullptr;
  std::vector<const AddedToken*> by_length_;  // longest first
  std::array<bool, 256> first_byte_{};
};

}  // namespace qinfer::tok
