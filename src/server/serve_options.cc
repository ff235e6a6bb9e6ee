#include "server/serve_options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/prefix_flags.h"
#include "model/model.h"
#include "util/args.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer::server {

namespace {

// vLLM flags that select GPU/cluster behaviour; on this CPU engine they have no effect.
const char* const kIgnoredWithValue[] = {
    "gpu-memory-utilization", "tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size",
    "dtype", "kv-cache-dtype", "swap-space", "cpu-offload-gb", "block-size", "quantization",
    "max-num-partial-prefills", "seed", "tokenizer-mode", "load-format", "distributed-executor-backend",
    "uvicorn-log-level", "compilation-config", "mm-processor-kwargs",
    "max-seq-len-to-capture", "revision", "download-dir", "hf-overrides",
    "generation-config", "override-generation-config", "chat-template-content-format"};
const char* const kIgnoredFlags[] = {
    "skip-mm-profiling", "trust-remote-code", "enforce-eager", "enable-chunked-prefill", "no-enable-chunked-prefill",
    "disable-log-requests", "disable-log-stats", "enable-log-requests", "disable-custom-all-reduce",
    "disable-frontend-multiprocessing", "enable-expert-parallel", "async-scheduling",
    "enable-prompt-tokens-details", "enable-request-id-headers"};

bool env_true(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s = v;
  return s == "1" || s == "true" || s == "True" || s == "TRUE";
}

nlohmann::ordered_json json_option(const Args& a, const std::string& flag, const char* want, const char* example) {
  std::string v = a.get(flag);
  try {
    return parse_ordered_json(v, "option --" + flag);
  } catch (const JsonError&) {
    fail("option --", flag, ": '", v, "' is not JSON (expected ", want, ", e.g. ", example, ")");
  }
}

}  // namespace

int64_t parse_model_len(const std::string& flag, const std::string& value) {
  std::string v = value;
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.erase(v.begin());
  if (v == "-1" || v == "auto") return 0;
  auto bad = [&](const std::string& why) {
    fail("option --", flag, ": '", value, "' ", why, " (examples: 32768, 32k = 32000, 32K = 32768, 1M = 1048576)");
  };
  if (v.empty()) bad("is empty");
  char suffix = 0;
  if (std::isalpha(static_cast<unsigned char>(v.back()))) {
    suffix = v.back();
    v.pop_back();
  }
  size_t dot = v.find('.');
  bool digits = !v.empty() && v.find_first_not_of("0123456789.") == std::string::npos &&
                (dot == std::string::npos || (dot > 0 && dot + 1 < v.size() && v.find('.', dot + 1) == std::string::npos));
  if (!digits) bad("is not a whole number with an optional k/m/g/t or K/M/G/T suffix");
  double mult = 1;
  bool binary = false;
  switch (suffix) {
    case 0: break;
    case 'k': mult = 1e3; break;
    case 'm': mult = 1e6; break;
    case 'g': mult = 1e9; break;
    case 't': mult = 1e12; break;
    case 'K': mult = 1024.0; binary = true; break;
    case 'M': mult = 1024.0 * 1024; binary = true; break;
    case 'G': mult = 1024.0 * 1024 * 1024; binary = true; break;
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024; binary = true; break;
    default: bad(std::string("has an unknown suffix '") + suffix + "'");
  }
  if (dot != std::string::npos && (binary || suffix == 0)) {
    bad(suffix ? "has a decimal with a binary suffix (use the lower-case decimal suffix)" : "is not a whole number");
  }
  double n = std::stod(v) * mult;
  if (n < 1 || n > 1e15) bad("is out of range");
  return static_cast<int64_t>(n);
}

std::string serve_usage() {
  return "usage: qinfer serve MODEL_DIR [--host H] [--port P] [--api-key KEY] [--served-model-name NAME...]\n"
         "       (--host defaults to 127.0.0.1; the key may come from QINFER_API_KEY or VLLM_API_KEY instead)\n"
         "       [--max-connections N (1024)] [--max-connections-per-client N (256; 0: no bound)]\n"
         "       [--header-timeout SECONDS (5)] [--read-timeout SECONDS (10)]\n"
         "       [--max-num-seqs N] [--max-model-len N] [--max-num-batched-tokens N]\n"
         "       (--max-model-len above the model's context is refused unless\n"
         "        QINFER_ALLOW_LONG_MAX_MODEL_LEN=1, which serves the model's context instead)\n"
         "       [--reasoning-parser qwen3] [--enable-auto-tool-choice] [--tool-call-parser qwen3_coder]\n"
         "       [--limit-mm-per-prompt '{\"image\": N}'] [--threads N] [--dense auto|bf16|bf16c|int8]\n"
         "       [--allowed-local-media-path DIR (image_url file:// URLs inside DIR)]\n"
         "       [--memory-budget-gb G] [--experts auto|resident|mapped]\n"
         "       [--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": K}'] (K 1..4;\n"
         "        optional \"disable_by_batch_size\": N; cheaper drafts, same output: \"draft_vocab_size\": N,\n"
         "        \"draft_lm_head\": \"int8\", \"draft_layer\": \"int8\")\n"
         "       [--chat-template FILE] [--default-chat-template-kwargs JSON] [--language-model-only]\n"
         "       [--ssl-keyfile F --ssl-certfile F] [--allowed-origins JSON] [--allowed-methods JSON]\n"
         "       [--allowed-headers JSON] [--allow-credentials] [--max-waiting-requests N (256)]\n"
         "       [--max-queued-seqs N (2048)] [--max-queued-tokens N (16777216)] [--max-queued-bytes-gb GIB (1)]\n"
         "       (what may wait in the engine's queue: sequences, their prompt tokens, their work memory;\n"
         "        beyond it a request gets 503, and one that alone needs more a 400)\n"
         "       [--request-timeout S (0: none)] [--drain-timeout S (30)] [--disable-uvicorn-access-log]\n"
         "       [--enable-prefix-caching (accepted, no effect yet)] [--mm-encoder-tp-mode weights|data]\n"
         "       --max-model-len takes vLLM's suffixes: 32k = 32000, 32K = 32768, 1M = 1048576, -1/auto\n"
         "       [--enable-prefix-caching | --no-enable-prefix-caching] [--prefix-cache-gb GB]\n"
         "       (prefix caching is on by default; its budget defaults to a quarter of the available memory, never the planned KV)\n"
         "       vLLM GPU flags (--gpu-memory-utilization, --tensor-parallel-size, --dtype,\n"
         "       --skip-mm-profiling, ...) are accepted and ignored.\n";
}

ServeOptions parse_serve_options(int argc, char** argv) {
  std::vector<OptionSpec> specs = {
      {"host", true}, {"port", true}, {"api-key", true}, {"served-model-name", true, true},
      {"max-num-seqs", true}, {"max-model-len", true}, {"max-num-batched-tokens", true},
      {"reasoning-parser", true}, {"tool-call-parser", true}, {"enable-auto-tool-choice", false},
      {"limit-mm-per-prompt", true}, {"threads", true}, {"dense", true}, {"dense-int8", false}, {"model", true},
      {"memory-budget-gb", true}, {"experts", true},
      {"help", false}, {"chat-template", true}, {"default-chat-template-kwargs", true},
      {"language-model-only", false}, {"mm-encoder-tp-mode", true},
      {"ssl-keyfile", true}, {"ssl-certfile", true}, {"allowed-origins", true}, {"allowed-methods", true},
      {"allowed-headers", true}, {"allow-credentials", false}, {"max-waiting-requests", true},
      {"max-queued-seqs", true}, {"max-queued-tokens", true}, {"max-queued-bytes-gb", true},
      {"request-timeout", true}, {"drain-timeout", true}, {"disable-uvicorn-access-log", false},
      {"disable-access-log", false}, {"max-connections", true}, {"read-timeout", true},
      {"max-connections-per-client", true}, {"header-timeout", true},
      {"speculative-config", true}, {"allowed-local-media-path", true}};
  for (auto& f : engine::prefix_cache_option_specs()) specs.push_back(f);
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
  // A key on the command line is visible to every user in `ps`; the environment is not.
  o.api_key = a.get_or("api-key", "");
  o.api_key_source = o.api_key.empty() ? "" : "--api-key";
  for (const char* env : {"QINFER_API_KEY", "VLLM_API_KEY"}) {
    const char* v = std::getenv(env);
    if (o.api_key.empty() && v && *v) {
      o.api_key = v;
      o.api_key_source = env;
    }
  }
  int64_t conns = a.get_int("max-connections", o.max_connections);
  if (conns < 8 || conns > 65536) fail("option --max-connections: must be in [8, 65536], got ", conns);
  o.max_connections = static_cast<int>(conns);
  int64_t rt = a.get_int("read-timeout", o.read_timeout_s);
  if (rt < 1 || rt > 3600) fail("option --read-timeout: must be in [1, 3600] seconds, got ", rt);
  o.read_timeout_s = static_cast<int>(rt);
  int64_t per = a.get_int("max-connections-per-client", std::min(o.max_connections_per_client, o.max_connections));
  if (per < 0 || per > o.max_connections) {
    fail("option --max-connections-per-client: must be in [0, --max-connections = ", o.max_connections, "], got ", per);
  }
  o.max_connections_per_client = static_cast<int>(per);
  o.header_timeout_s = a.get_double("header-timeout", o.header_timeout_s);
  if (!(o.header_timeout_s >= 0.1 && o.header_timeout_s <= 3600)) {
    fail("option --header-timeout: must be in [0.1, 3600] seconds, got ", o.header_timeout_s);
  }
  o.served_model_names = a.get_all("served-model-name");
  for (auto& n : extra_names) o.served_model_names.push_back(n);
  for (const auto& n : o.served_model_names) {
    if (n.empty()) fail("option --served-model-name: empty name");
  }
  int64_t seqs = a.get_int("max-num-seqs", o.max_num_seqs);
  if (seqs < 1 || seqs > 4096) fail("option --max-num-seqs: must be in [1, 4096], got ", seqs);
  o.max_num_seqs = static_cast<int>(seqs);
  if (a.has("max-model-len")) o.max_model_len = parse_model_len("max-model-len", a.get("max-model-len"));
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
      j = parse_json(v, "option --limit-mm-per-prompt");
    } catch (const JsonError&) {
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
  if (a.has("allowed-local-media-path")) {
    o.media.allowed_local_media_path = a.get("allowed-local-media-path");
    std::error_code ec;
    if (!std::filesystem::is_directory(o.media.allowed_local_media_path, ec)) {
      fail("option --allowed-local-media-path: '", o.media.allowed_local_media_path, "' is not a directory");
    }
  }
  for (const char* env : {"QINFER_IMAGE_FETCH_TIMEOUT", "VLLM_IMAGE_FETCH_TIMEOUT"}) {
    const char* v = std::getenv(env);
    if (!v || !*v) continue;
    char* end = nullptr;
    double t = std::strtod(v, &end);
    if (*end != '\0' || !(t > 0 && t <= 3600)) fail("$", env, ": must be a number of seconds in (0, 3600], got '", v, "'");
    o.media.fetch_timeout_s = t;
    break;
  }
  engine::EngineOptions eo;
  engine::prefix_cache_options_from_args(a, eo);
  o.enable_prefix_caching = eo.enable_prefix_caching;
  o.prefix_cache_gb = eo.prefix_cache_gb;
  o.chat_template = a.get_or("chat-template", "");
  if (a.has("default-chat-template-kwargs")) {
    o.default_chat_template_kwargs = json_option(a, "default-chat-template-kwargs", "an object",
                                                 "'{\"enable_thinking\": false}'");
    if (!o.default_chat_template_kwargs.is_object()) {
      fail("option --default-chat-template-kwargs: expected a JSON object such as '{\"enable_thinking\": false}'");
    }
  }
  o.language_model_only = a.has("language-model-only");
  o.mm_encoder_tp_mode = a.get_or("mm-encoder-tp-mode", "");
  if (!o.mm_encoder_tp_mode.empty() && o.mm_encoder_tp_mode != "weights" && o.mm_encoder_tp_mode != "data") {
    fail("option --mm-encoder-tp-mode: must be 'weights' or 'data', got '", o.mm_encoder_tp_mode, "'");
  }
  o.ssl_keyfile = a.get_or("ssl-keyfile", "");
  o.ssl_certfile = a.get_or("ssl-certfile", "");
  if (o.ssl_keyfile.empty() != o.ssl_certfile.empty()) {
    fail("option ", o.ssl_keyfile.empty() ? "--ssl-keyfile" : "--ssl-certfile", ": HTTPS needs both "
         "--ssl-keyfile and --ssl-certfile");
  }
  for (auto [flag, dst] : {std::pair{"allowed-origins", &o.allowed_origins}, std::pair{"allowed-methods", &o.allowed_methods},
                           std::pair{"allowed-headers", &o.allowed_headers}}) {
    if (!a.has(flag)) continue;
    nlohmann::ordered_json j = json_option(a, flag, "a list of strings", "'[\"*\"]'");
    if (!j.is_array()) fail("option --", flag, ": expected a JSON list of strings such as '[\"*\"]'");
    dst->clear();
    for (const auto& v : j) {
      if (!v.is_string()) fail("option --", flag, ": every entry must be a string");
      dst->push_back(v.get<std::string>());
    }
  }
  o.allow_credentials = a.has("allow-credentials");
  int64_t waiting = a.get_int("max-waiting-requests", o.max_waiting);
  if (waiting < 0 || waiting > 1000000) fail("option --max-waiting-requests: must be in [0, 1000000], got ", waiting);
  o.max_waiting = static_cast<int>(waiting);
  int64_t queued_seqs = a.get_int("max-queued-seqs", o.max_queued_seqs);
  if (queued_seqs < 1 || queued_seqs > 1000000) fail("option --max-queued-seqs: must be in [1, 1000000], got ", queued_seqs);
  o.max_queued_seqs = static_cast<int>(queued_seqs);
  o.max_queued_tokens = a.get_int("max-queued-tokens", o.max_queued_tokens);
  if (o.max_queued_tokens < 1 || o.max_queued_tokens > (int64_t{1} << 40)) {
    fail("option --max-queued-tokens: must be in [1, 2^40], got ", o.max_queued_tokens);
  }
  if (a.has("max-queued-bytes-gb")) {
    const double gib = a.get_double("max-queued-bytes-gb", 1);
    if (!std::isfinite(gib) || gib <= 0 || gib > 1 << 20) {
      fail("option --max-queued-bytes-gb: must be a size in GiB, more than 0, got ", a.get("max-queued-bytes-gb"));
    }
    o.max_queued_bytes = std::max<int64_t>(1, static_cast<int64_t>(gib * double(int64_t{1} << 30)));
  }
  o.request_timeout = a.get_double("request-timeout", 0);
  if (!(o.request_timeout >= 0)) fail("option --request-timeout: must be >= 0 seconds");
  o.drain_timeout = a.get_double("drain-timeout", o.drain_timeout);
  if (!(o.drain_timeout >= 0)) fail("option --drain-timeout: must be >= 0 seconds");
  o.access_log = !a.has("disable-uvicorn-access-log") && !a.has("disable-access-log");
  int64_t threads = a.get_int("threads", 0);
  if (threads < 0) fail("option --threads: must be >= 0");
  o.threads = static_cast<int>(threads);
  // --dense auto|bf16|bf16c|int8 as in the other subcommands; --dense-int8 kept as a shorthand.
  parse_dense_mode(a.get_or("dense", a.has("dense-int8") ? "int8" : "auto"), &o.dense_int8, &o.dense_bf16c);
  if (a.has("memory-budget-gb")) {
    const double g = a.get_double("memory-budget-gb", 0);
    if (!(g > 0)) fail("option --memory-budget-gb: must be a positive number of GB (10^9 bytes)");
    o.memory_budget = g * 1e9;
  }
  o.experts = a.get_or("experts", "auto");   // checked by the CLI with the model's parser
  if (a.has("speculative-config")) o.spec = engine::parse_speculative_config(a.get("speculative-config"));
  for (const char* f : kIgnoredWithValue) {
    if (a.has(f)) o.ignored.push_back(std::string("--") + f + " " + a.get(f));
  }
  for (const char* f : kIgnoredFlags) {
    if (a.has(f)) o.ignored.push_back(std::string("--") + f);
  }
  if (!o.mm_encoder_tp_mode.empty()) o.ignored.push_back("--mm-encoder-tp-mode " + o.mm_encoder_tp_mode);
  return o;
}

}  // namespace qinfer::server
