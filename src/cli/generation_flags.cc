#include "cli/generation_flags.h"

#include "util/error.h"

namespace qinfer::cli {

std::vector<OptionSpec> generation_option_specs() {
  return {{"model", true}, {"temperature", true}, {"top-p", true}, {"top-k", true}, {"min-p", true},
          {"repetition-penalty", true}, {"presence-penalty", true}, {"frequency-penalty", true},
          {"seed", true}, {"stop", true, true}, {"max-tokens", true}, {"threads", true}, {"dense", true},
          {"ignore-eos", false}, {"help", false}};
}

const char* generation_flags_help() {
  return "  --temperature T (0 = greedy)  --top-p P  --top-k K  --min-p P\n"
         "  --repetition-penalty R  --presence-penalty P  --frequency-penalty F\n"
         "  --seed S  --stop STR (repeatable)  --max-tokens N  --ignore-eos\n"
         "  --threads N  --dense bf16|int8\n";
}

engine::GenParams gen_params_from_args(const Args& a, double default_temperature) {
  engine::GenParams p;
  p.temperature = a.get_double("temperature", default_temperature);
  p.top_p = a.get_double("top-p", 1.0);
  p.top_k = static_cast<int>(a.get_int("top-k", -1));
  p.min_p = a.get_double("min-p", 0.0);
  p.repetition_penalty = a.get_double("repetition-penalty", 1.0);
  p.presence_penalty = a.get_double("presence-penalty", 0.0);
  p.frequency_penalty = a.get_double("frequency-penalty", 0.0);
  if (a.has("seed")) p.seed = static_cast<uint64_t>(a.get_int("seed", 0));
  p.stop = a.get_all("stop");
  p.max_tokens = a.get_int("max-tokens", 256);
  if (p.max_tokens <= 0) fail("--max-tokens must be positive");
  p.ignore_eos = a.has("ignore-eos");
  return p;
}

engine::EngineOptions engine_options_from_args(const Args& a) {
  engine::EngineOptions o;
  o.max_num_seqs = 1;
  o.load.threads = static_cast<int>(a.get_int("threads", 0));
  std::string dense = a.get_or("dense", "bf16");
  if (dense != "bf16" && dense != "int8") fail("--dense must be bf16 or int8, got '", dense, "'");
  o.load.dense_int8 = dense == "int8";
  return o;
}

}  // namespace qinfer::cli
