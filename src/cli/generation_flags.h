// The sampling and model flags shared by `qinfer generate` and `qinfer chat`.
#pragma once
#include <vector>

#include "engine/engine.h"
#include "engine/gen_params.h"
#include "util/args.h"

namespace qinfer::cli {

// Option specs: --temperature --top-p --top-k --min-p --repetition-penalty
// --presence-penalty --frequency-penalty --seed --stop (repeatable) --max-tokens
// --threads --dense, plus --model.
std::vector<OptionSpec> generation_option_specs();
engine::GenParams gen_params_from_args(const Args& a, double default_temperature);
engine::EngineOptions engine_options_from_args(const Args& a);
const char* generation_flags_help();

}  // namespace qinfer::cli
