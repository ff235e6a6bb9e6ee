// Finds added tokens (<|im_start|>, <think>, ...) in raw text: the leftmost occurrence, and
// the longest token among those that start there (HF's LeftmostLongest matching).
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace qinfer::tok {

class AddedTokenMatcher {
 public:
  struct Match {
    size_t start, len;
    int id;
  };
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  // The first match at or after `from`; tokens flagged special are skipped unless include_special.
  std::optional<Match> find(std::string_view text, size_t from, bool include_special) const;

 private:
  std::vector<AddedToken> tokens_;
  std::array<std::vector<int>, 256> by_first_byte_;  // indices into tokens_, longest first
};

}  // namespace qinfer::tok
