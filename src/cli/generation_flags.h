// Flags shared by the subcommands: the model-loading flags (--threads, --dense) of
// every command that loads a model, and the sampling flags of `generate` and `chat`.
#pragma once
#include <vector>

#include "engine/engine.h"
#include "engine/gen_params.h"
#include "model/model.h"
#include "util/args.h"

namespace qinfer::cli {

// Option specs: --temperature --top-p --top-k --min-p --repetition-penalty
// --presence-penalty --frequency-penalty --seed --stop (repeatable) --max-tokens
// --threads --dense, plus --model.
std::vector<OptionSpec> generation_option_specs();
engine::GenParams gen_params_from_args(const Args& a, double default_temperature);
// --threads N (0 = all cores, negative refused) and --dense auto|bf16|bf16c|int8, errors naming the flag;
// the memory plan's --memory-budget-gb, --max-model-len and --experts where the command declares them.
LoadOptions load_options_from_args(const Args& a);
// The memory plan's option specs (--memory-budget-gb, --max-model-len, --experts) and their help.
std::vector<OptionSpec> memory_option_specs();
const char* memory_flags_help();
// --model DIR, checked before anything loads: an Error saying the folder does not exist or is
// not a folder (rather than a missing config.json inside it).
std::string model_dir_from_args(const Args& a);
// An output file named by `flag`, checked before the slow work: its folder must exist and the
// file must be creatable or writable there.
void check_output_path(const std::string& path, const std::string& flag);
engine::EngineOptions engine_options_from_args(const Args& a);
const char* generation_flags_help();

}  // namespace qinfer::cli
