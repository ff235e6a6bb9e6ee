// `qinfer serve MODEL [flags]`: the vLLM `vllm serve` flag set, parsed. Flags that
// only mean something on a GPU (tensor parallelism, memory utilisation, dtype, ...)
// are accepted and listed in `ignored` so the caller can log them once.
#pragma once
#include <string>
#include <vector>

#include "engine/speculative.h"
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace qinfer::server {

struct ServeOptions {
  std::string model_dir;
  std::string host = "127.0.0.1";           // loopback unless --host says otherwise (vLLM: all)
  int port = 8000;
  std::string api_key;                       // --api-key, else $QINFER_API_KEY / $VLLM_API_KEY; empty: no auth
  std::string api_key_source;                // where api_key came from, for the start-up log
  int max_connections = 1024;                // --max-connections: connections served at once
  int read_timeout_s = 10;                   // --read-timeout: a body read silent this long is dropped
  double header_timeout_s = 5;               // --header-timeout: request line + headers due within it (408)
  int max_connections_per_client = 256;      // --max-connections-per-client (one IP address; 0: no bound)
  std::vector<std::string> served_model_names;  // empty: the model path
  int max_num_seqs = 32;
  int64_t max_model_len = 0;                 // 0: the model's
  // QINFER_ALLOW_LONG_MAX_MODEL_LEN or VLLM_ALLOW_LONG_MAX_MODEL_LEN set to 1/true:
  // a --max-model-len above the model's context is lowered to it instead of refused.
  bool allow_long_max_model_len = false;
  int prefill_chunk = 512;                   // --max-num-batched-tokens
  std::string reasoning_parser;              // "" or "qwen3"
  std::string tool_call_parser;              // "" or "qwen3_coder"
  bool enable_auto_tool_choice = false;
  int max_images_per_prompt = 1;             // --limit-mm-per-prompt {"image": N}
  // Image fetching: --allowed-local-media-path DIR (file:// URLs inside DIR), the http(s)
  // fetch timeout ($VLLM_IMAGE_FETCH_TIMEOUT or $QINFER_IMAGE_FETCH_TIMEOUT, seconds) and byte limit.
  MediaOptions media;
  bool enable_prefix_caching = true;         // --[no-]enable-prefix-caching
  double prefix_cache_gb = -1;               // --prefix-cache-gb (< 0: from MemAvailable)
  int threads = 0;
  bool dense_int8 = false;
  int dense_bf16c = -1;                      // --dense: LoadOptions::dense_bf16c
  double memory_budget = 0;                  // --memory-budget-gb, bytes; 0: what is available
  std::string experts = "auto";              // --experts auto|resident|mapped
  engine::SpeculativeOptions spec;            // --speculative-config
  // --- operational flags (vLLM spelling where vLLM has one) ---
  std::string chat_template;                 // --chat-template: a file, or the template text itself
  nlohmann::ordered_json default_chat_template_kwargs = nlohmann::ordered_json::object();
  bool language_model_only = false;          // --language-model-only: image parts are refused
  std::string mm_encoder_tp_mode;            // "weights" | "data": accepted (one CPU process: no effect)
  std::string ssl_keyfile, ssl_certfile;     // both set: HTTPS
  std::vector<std::string> allowed_origins = {"*"}, allowed_methods = {"*"}, allowed_headers = {"*"};
  bool allow_credentials = false;
  int max_waiting = 256;                     // --max-waiting-requests: queued requests beyond it get 503
  // The engine's queue bounds (engine::EngineOptions, same defaults): --max-queued-seqs,
  // --max-queued-tokens (prompt tokens of all waiting sequences), --max-queued-bytes-gb (GiB
  // of waiting work memory besides the running sequences' planned share).
  int max_queued_seqs = 2048;
  int64_t max_queued_tokens = int64_t{1} << 24;
  int64_t max_queued_bytes = int64_t{1} << 30;
  double request_timeout = 0;                // --request-timeout S: a request running longer is ended (0: none)
  double drain_timeout = 30;                 // --drain-timeout S: SIGTERM waits this long for running requests
  bool access_log = true;                    // --disable-uvicorn-access-log / --disable-access-log turn it off
  bool help = false;
  std::vector<std::string> ignored;          // "--flag value" strings accepted without effect
};

// "32k" -> 32000, "32K" -> 32768, "1M" -> 1048576, "25.6k" -> 25600, "-1"/"auto" -> 0 (the model's),
// as vLLM's human_readable_int (lower case decimal, upper case binary, no decimals with binary).
int64_t parse_model_len(const std::string& flag, const std::string& value);

// argv after "serve". Throws qinfer::Error naming the flag on bad input.
ServeOptions parse_serve_options(int argc, char** argv);
std::string serve_usage();

}  // namespace qinfer::server
