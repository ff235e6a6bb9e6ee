// Greedy sampling of exactly n tokens (EOS ignored): the prefix-cache tests compare
// runs token for token.
#pragma once
#include "engine/gen_params.h"

namespace qinfer::engine::testing {

inline GenParams greedy(int n) {
  GenParams p;
  p.temperature = 0;
  p.ignore_eos = true;
  p.max_tokens = n;
  return p;
}

}  // namespace qinfer::engine::testing
