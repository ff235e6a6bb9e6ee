#include "engine/prompt_logprobs.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/error.h"

namespace qinfer::engine {

TokenOut prompt_token_logprob(const float* row, int vocab, int target, int top_n) {
  if (target < 0 || target >= vocab) fail("prompt_logprobs: token id ", target, " is outside [0, ", vocab, ")");
  float mx = -INFINITY;
  for (int i = 0; i < vocab; ++i) mx = std::max(mx, row[i]);
  if (!std::isfinite(mx)) fail("prompt_logprobs: the logits row has no finite entry");
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(row[i]) - mx);
  const double lse = mx + std::log(sum);
  TokenOut t;
  t.token = target;
  t.logprob = static_cast<float>(row[target] - lse);
  int greater = 0;
  for (int i = 0; i < vocab; ++i) greater += row[i] > row[target];
  t.rank = greater + 1;
  int k = std::min(top_n, vocab);
  if (k > 0) {
    std::vector<int> idx(static_cast<size_t>(vocab));
    for (int i = 0; i < vocab; ++i) idx[static_cast<size_t>(i)] = i;
    auto better = [row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); };
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
    for (int i = 0; i < k; ++i) {
      t.top.push_back({idx[static_cast<size_t>(i)], static_cast<float>(row[idx[static_cast<size_t>(i)]] - lse)});
    }
  }
  return t;
}

}  // namespace qinfer::engine
