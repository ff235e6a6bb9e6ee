// qinfer bench --speculative K (bench_speculative.cc).
#pragma once
#include <cstdint>

#include "model/model.h"

namespace qinfer::cli {
// Needs a model loaded with its MTP head. draft_vocab > 0 also measures drafting over the
// first draft_vocab vocabulary rows (and uses that in the cycles).
void bench_speculative(Model& m, int K, int rounds, int64_t draft_vocab);
}  // namespace qinfer::cli
