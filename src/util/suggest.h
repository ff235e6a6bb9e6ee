// "Did you mean ...?": the known name nearest to a mistyped one.
#pragma once
#include <string>
#include <vector>

namespace qinfer {

// Edit distance between two strings (a swap of two neighbouring characters counts as one).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `typed` when it is close enough to be a typo (distance at most
// max(1, typed.size() / 3), or `typed` is a prefix of exactly one candidate); "" otherwise.
std::string nearest_name(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace qinfer
