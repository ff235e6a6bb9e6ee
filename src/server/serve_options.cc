#include "server/serve_options.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "util/args.h"
#include "util/error.h"

namespace qinfer::server {

namespace {

// vLLM flags that select GPU/cluster behaviour; on this CPU engine they have no effect.
const char* const kIgnoredWithValue[] = {
    "gpu-memory-utilization", "tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size",
    "dtype", "kv-cache-dtype", "swap-space", "cpu-offload-gb", "block-size", "quantization",
    "max-num-partial-prefills", "seed", "tokenizer-mode", "load-format", "distributed-executor-backend",
    "uvicorn-log-level", "compilation-config", "speculative-config", "mm-processor-kwargs",
    "max-seq-len-to-capture", "revision", "download-dir", "hf-overrides",
    "generation-config", "override-generation-config", "allowed-origins", "chat-template-content-format"};
const char* const kIgnoredFlags[] = {
    "skip-mm-profiling", "trust-remote-code", "enforce-eager", "enable-prefix-caching",
    "no-enable-prefix-caching", "enable-chunked-prefill", "no-enable-chunked-prefill",
    "disable-log-requests", "disable-log-stats", "enable-log-requests", "disable-custom-all-reduce",
    "disable-frontend-multiprocessing", "enable-expert-parallel", "async-scheduling",
    "disable-uvicorn-access-log", "enable-prompt-tokens-details"};

bool env_true(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s = v;
  return s == "1" || s == "true" || s == "True" || s == "TRUE";
}

}  // namespace

std::string serve_usage() {
  return "usage: qinfer serve MODEL_DIR [--host H] [--port P] [--api-key KEY] [--served-model-name NAME...]\n"
         "       [--max-num-seqs N] [--max-model-len N] [--max-num-batched-tokens N]\n"
         "       (--max-model-len above the model's context is refused unless\n"
         "        QINFER_ALLOW_LONG_MAX_MODEL_LEN=1, which serves the model's context instead)\n"
         "       [--reasoning-parser qwen3] [--enable-auto-tool-choice] [--tool-call-parser qwen3_coder]\n"
         "       [--limit-mm-per-prompt '{\"image\": N}'] [--threads N] [--dense bf16|int8]\n"
         "       [--memory-budget-gb G] [--experts auto|resident|mapped]\n"
         "       vLLM GPU flags (--gpu-memory-utilization, --tensor-parallel-size, --dtype,\n"
         "       --skip-mm-profiling, ...) are accepted and ignored.\n";
}

ServeOptions parse_serve_options(int argc, char** argv) {
  std::vector<OptionSpec> specs = {
      {"host", true}, {"port", true}, {"api-key", true}, {"served-model-name", true, true},
      {"max-num-seqs", true}, {"max-model-len", true}, {"max-num-batched-tokens", true},
      {"reasoning-parser", true}, {"tool-call-parser", true}, {"enable-auto-tool-choice", false},
      {"limit-mm-per-prompt", true}, {"threads", true}, {"dense", true}, {"dense-int8", false},
      {"memory-budget-gb", true}, {"experts", true}, {"model", true},
      {"help", false}, {"chat-template", true}};
  for (const char* f : kIgnoredWithValue) specs.push_back({f, true});
  for (const char* f : kIgnoredFlags) specs.push_back({f, false});
  // vLLM allows several names after --served-model-name; gather the extra positionals
  // that follow it into that option first.
  std::vector<std::string> store(argv, argv + argc);
  std::vector<std::string> extra_names;
  std::vector<char*> kept;
  for (size_t i = 0; i < store.size(); ++i) {
    kept.push_back(store[i].data());
    if (store[i] == "--served-model-name" && i + 1 < store.size()) {
      kept.push_back(store[++i].data());
      while (i + 1 < store.size() && store[i + 1].rfind("--", 0) != 0) extra_names.push_back(store[++i]);
    }
  }
  Args a(static_cast<int>(kept.size()), kept.data(), specs);
  ServeOptions o;
  o.help = a.has("help");
  if (o.help) return o;
  if (a.has("model")) o.model_dir = a.get("model");
  if (!a.positional().empty()) {
    if (a.positional().size() > 1 || a.has("model")) {
      fail("unexpected argument '", a.positional().back(), "' (one model folder expected)");
    }
    o.model_dir = a.positional()[0];
  }
  if (o.model_dir.empty()) fail("missing MODEL_DIR (qinfer serve MODEL_DIR [flags])");
  o.host = a.get_or("host", o.host);
  int64_t port = a.get_int("port", o.port);
  if (port < 0 || port > 65535) fail("option --port: ", port, " is not a TCP port");
  o.port = static_cast<int>(port);
  o.api_key = a.get_or("api-key", "");
  o.served_model_names = a.get_all("served-model-name");
  for (auto& n : extra_names) o.served_model_names.push_back(n);
  for (const auto& n : o.served_model_names) {
    if (n.empty()) fail("option --served-model-name: empty name");
  }
  int64_t seqs = a.get_int("max-num-seqs", o.max_num_seqs);
  if (seqs < 1 || seqs > 4096) fail("option --max-num-seqs: must be in [1, 4096], got ", seqs);
  o.max_num_seqs = static_cast<int>(seqs);
  o.max_model_len = a.get_int("max-model-len", 0);
  if (o.max_model_len < 0) fail("option --max-model-len: must be positive, got ", o.max_model_len);
  o.allow_long_max_model_len =
      env_true("QINFER_ALLOW_LONG_MAX_MODEL_LEN") || env_true("VLLM_ALLOW_LONG_MAX_MODEL_LEN");
  int64_t chunk = a.get_int("max-num-batched-tokens", o.prefill_chunk);
  if (chunk < 1) fail("option --max-num-batched-tokens: must be positive, got ", chunk);
  o.prefill_chunk = static_cast<int>(chunk);
  o.reasoning_parser = a.get_or("reasoning-parser", "");
  if (!o.reasoning_parser.empty() && o.reasoning_parser != "qwen3") {
    fail("option --reasoning-parser: only 'qwen3' is supported, got '", o.reasoning_parser, "'");
  }
  o.tool_call_parser = a.get_or("tool-call-parser", "");
  if (!o.tool_call_parser.empty() && o.tool_call_parser != "qwen3_coder") {
    fail("option --tool-call-parser: only 'qwen3_coder' is supported, got '", o.tool_call_parser, "'");
  }
  o.enable_auto_tool_choice = a.has("enable-auto-tool-choice");
  if (o.enable_auto_tool_choice && o.tool_call_parser.empty()) {
    fail("option --enable-auto-tool-choice: needs --tool-call-parser");
  }
  if (a.has("limit-mm-per-prompt")) {
    std::string v = a.get("limit-mm-per-prompt");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(v);
    } catch (const nlohmann::json::exception&) {
      fail("option --limit-mm-per-prompt: '", v, "' is not JSON (expected e.g. '{\"image\": 2}')");
    }
    if (!j.is_object()) fail("option --limit-mm-per-prompt: expected a JSON object such as {\"image\": 2}");
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int>() < 0) {
        fail("option --limit-mm-per-prompt: '", it.key(), "' must be a non-negative integer");
      }
      if (it.key() == "image") o.max_images_per_prompt = it.value().get<int>();
    }
  }
  if (a.has("chat-template")) fail("option --chat-template: custom templates are not supported yet");
  int64_t threads = a.get_int("threads", 0);
  if (threads < 0) fail("option --threads: must be >= 0");
  o.threads = static_cast<int>(threads);
  // --dense bf16|int8 as in the other subcommands; --dense-int8 kept as a shorthand.
  std::string dense = a.get_or("dense", a.has("dense-int8") ? "int8" : "bf16");
  if (dense != "bf16" && dense != "int8") fail("option --dense must be bf16 or int8, got '", dense, "'");
  o.dense_int8 = dense == "int8";
  if (a.has("memory-budget-gb")) {
    const double g = a.get_double("memory-budget-gb", 0);
    if (!(g > 0)) fail("option --memory-budget-gb: must be a positive number of GB (10^9 bytes)");
    o.memory_budget = g * 1e9;
  }
  o.experts = a.get_or("experts", "auto");   // checked by the CLI with the model's parser
  for (const char* f : kIgnoredWithValue) {
    if (a.has(f)) o.ignored.push_back(std::string("--") + f + " " + a.get(f));
  }
  for (const char* f : kIgnoredFlags) {
    if (a.has(f)) o.ignored.push_back(std::string("--") + f);
  }
  return o;
}

}  // namespace qinfer::server
