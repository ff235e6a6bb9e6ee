#include "cli/generation_flags.h"

#include <unistd.h>

#include <filesystem>

#include "engine/prefix_flags.h"
#include "sampling/sampling_params.h"
#include "util/error.h"

namespace qinfer::cli {

namespace {

// Each sampling flag given is checked on its own, before the (slow) model load,
// with the sampler's own rules, so a bad value fails at once and names its flag.
void check_sampling_flags(const Args& a, const engine::GenParams& p) {
  using SP = sampling::SamplingParams;
  struct Field {
    const char* flag;
    float SP::*member;
    double value;
  };
  const Field fields[] = {{"temperature", &SP::temperature, p.temperature},
                          {"top-p", &SP::top_p, p.top_p},
                          {"min-p", &SP::min_p, p.min_p},
                          {"repetition-penalty", &SP::repetition_penalty, p.repetition_penalty},
                          {"presence-penalty", &SP::presence_penalty, p.presence_penalty},
                          {"frequency-penalty", &SP::frequency_penalty, p.frequency_penalty}};
  auto check = [](const char* flag, const SP& sp) {
    try {
      sp.validate(1);
    } catch (const Error& e) {
      fail("option --", flag, ": ", e.what());
    }
  };
  for (const Field& f : fields) {
    if (!a.has(f.flag)) continue;
    SP sp;
    sp.*f.member = static_cast<float>(f.value);
    check(f.flag, sp);
  }
  if (a.has("top-k")) {
    SP sp;
    sp.top_k = p.top_k;
    check("top-k", sp);
  }
}

}  // namespace

static void apply_memory_flags(const Args& a, LoadOptions& lo) {
  if (a.has("memory-budget-gb")) {
    const double g = a.get_double("memory-budget-gb", 0);
    if (!(g > 0)) fail("option --memory-budget-gb: must be a positive number of GB (10^9 bytes), got ",
                       a.get("memory-budget-gb"));
    lo.memory_budget = g * 1e9;
  }
  if (a.has("max-model-len")) {
    lo.max_model_len = a.get_int("max-model-len", 0);
    if (lo.max_model_len < 1) fail("option --max-model-len: must be positive, got ", lo.max_model_len);
  }
  lo.experts = model::parse_experts_placement(a.get_or("experts", "auto"));
}

std::vector<OptionSpec> generation_option_specs() {
  std::vector<OptionSpec> specs = {{"model", true}, {"temperature", true}, {"top-p", true}, {"top-k", true}, {"min-p", true},
          {"repetition-penalty", true}, {"presence-penalty", true}, {"frequency-penalty", true},
          {"seed", true}, {"stop", true, true}, {"max-tokens", true}, {"threads", true}, {"dense", true},
          {"ignore-eos", false}, {"help", false}, {"speculative-config", true}};
  for (auto& o : engine::prefix_cache_option_specs()) specs.push_back(o);
  for (auto& o : memory_option_specs()) specs.push_back(o);
  return specs;
}

std::vector<OptionSpec> memory_option_specs() {
  return {{"memory-budget-gb", true}, {"max-model-len", true}, {"experts", true}};
}

const char* memory_flags_help() {
  return "  --memory-budget-gb G (default: what the system has available, MemAvailable and the cgroup limit)\n"
         "  --max-model-len N (tokens the KV cache is planned for; default: the model's, lowered to fit)\n"
         "  --experts auto|resident|mapped (mapped: routed experts stay file-backed, the hot ones resident; GPTQ ones repacked on use)\n";
}

const char* generation_flags_help() {
  return "  --temperature T (0 = greedy)  --top-p P  --top-k K  --min-p P\n"
         "  --repetition-penalty R  --presence-penalty P  --frequency-penalty F\n"
         "  --seed S  --stop STR (repeatable)  --max-tokens N  --ignore-eos\n"
         "  --threads N  --dense auto|bf16|bf16c|int8 (auto: BF16 weights as stored or in a lossless 12-bit\n"
         "    form, the 12-bit one unless a start-up probe finds BF16 over 10% faster; int8: re-encoded,\n"
         "    per-row scale)\n"
         "  --memory-budget-gb G  --max-model-len N  --experts auto|resident|mapped\n"
         "  --enable-prefix-caching (default) | --no-enable-prefix-caching\n"
         "  --prefix-cache-gb GB  memory for cached prefixes (default: a quarter of the available memory, never the planned KV)\n"
         "  --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":K}'  (MTP drafting, K 1..4; cheaper\n"
         "    drafts, same output: \"draft_vocab_size\": N, \"draft_lm_head\": \"int8\", \"draft_layer\": \"int8\")\n";
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
  if (p.max_tokens <= 0) fail("option --max-tokens: must be positive, got ", p.max_tokens);
  p.ignore_eos = a.has("ignore-eos");
  check_sampling_flags(a, p);
  return p;
}

LoadOptions load_options_from_args(const Args& a) {
  LoadOptions lo;
  int64_t threads = a.get_int("threads", 0);
  if (threads < 0) fail("option --threads: must be >= 0 (0 = all cores), got ", threads);
  lo.threads = static_cast<int>(threads);
  parse_dense_mode(a.get_or("dense", "auto"), &lo.dense_int8, &lo.dense_bf16c);
  apply_memory_flags(a, lo);
  return lo;
}

std::string model_dir_from_args(const Args& a) {
  const std::string dir = a.get("model");
  std::error_code ec;
  const auto st = std::filesystem::status(dir, ec);
  if (!std::filesystem::exists(st)) fail("--model ", dir, ": folder does not exist");
  if (!std::filesystem::is_directory(st)) fail("--model ", dir, ": is not a folder (give the checkpoint folder)");
  return dir;
}

void check_output_path(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) fail(flag, " ", path, ": is a folder, not a file");
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) fail(flag, " ", path, ": folder ", parent.string(), " does not exist");
  if (fs::exists(p, ec) ? ::access(path.c_str(), W_OK) != 0 : ::access(parent.c_str(), W_OK) != 0)
    fail(flag, " ", path, ": cannot write there (permission denied)");
}

engine::EngineOptions engine_options_from_args(const Args& a) {
  engine::EngineOptions o;
  o.max_num_seqs = 1;
  LoadOptions lo = load_options_from_args(a);
  o.load.threads = lo.threads;
  o.load.dense_int8 = lo.dense_int8;
  o.load.dense_bf16c = lo.dense_bf16c;
  o.load.memory_budget = lo.memory_budget;
  o.load.experts = lo.experts;
  o.max_model_len = lo.max_model_len;
  engine::prefix_cache_options_from_args(a, o);
  if (a.has("speculative-config")) o.spec = engine::parse_speculative_config(a.get("speculative-config"));
  return o;
}

}  // namespace qinfer::cli
