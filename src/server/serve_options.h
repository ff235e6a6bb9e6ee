// `qinfer serve MODEL [flags]`: the vLLM `vllm serve` flag set, parsed. Flags that
// only mean something on a GPU (tensor parallelism, memory utilisation, dtype, ...)
// are accepted and listed in `ignored` so the caller can log them once.
#pragma once
#include <string>
#include <vector>

#include "server/openai_request.h"

namespace qinfer::server {

struct ServeOptions {
  std::string model_dir;
  std::string host = "0.0.0.0";
  int port = 8000;
  std::string api_key;                       // empty: no auth
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
  int threads = 0;
  bool dense_int8 = false;
  double memory_budget = 0;                  // --memory-budget-gb, bytes; 0: what is available
  std::string experts = "auto";              // --experts auto|resident|mapped
  bool help = false;
  std::vector<std::string> ignored;          // "--flag value" strings accepted without effect
};

// argv after "serve". Throws qinfer::Error naming the flag on bad input.
ServeOptions parse_serve_options(int argc, char** argv);
std::string serve_usage();

}  // namespace qinfer::server
