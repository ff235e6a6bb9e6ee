// qinfer bench --speculative K (bench_speculative.cc).
#pragma once
#include <cstdint>

#include "model/model.h"

namespace qinfer::cli {
// Needs a model loaded with its MTP head. draft_vocab > 0 / draft_int8 also measure drafting
// over the first draft_vocab vocabulary rows / with an int8 lm_head copy (and use that in the
// cycles); layer_int8 says the model was loaded with LoadOptions::draft_layer_int8.
void bench_speculative(Model& m, int K, int rounds, int64_t draft_vocab, bool draft_int8, bool layer_int8);
}  // namespace qinfer::cli
