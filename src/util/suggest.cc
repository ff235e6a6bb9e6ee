#include "util/suggest.h"

#include <algorithm>

namespace qinfer {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: insertions, deletions, substitutions and swaps of two neighbours.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string nearest_name(const std::string& typed, const std::vector<std::string>& candidates) {
  if (typed.empty()) return "";
  std::string prefix_match;
  int prefix_count = 0;
  for (const auto& c : candidates)
    if (c.compare(0, typed.size(), typed) == 0) ++prefix_count, prefix_match = c;
  if (prefix_count == 1) return prefix_match;
  const size_t limit = std::max<size_t>(1, typed.size() / 3);
  std::string best;
  size_t best_d = limit + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(typed, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace qinfer
