// What one generation request asks of the engine, and what the engine streams back.
// The server fills GenParams from an OpenAI request; the CLI fills it from flags.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qinfer::grammar {
class Grammar;
}
namespace qinfer::vision {
struct ImagePatches;
}

namespace qinfer::engine {

struct GenParams {
  int64_t max_tokens = -1;            // -1: up to the context length
  int64_t min_tokens = 0;             // EOS/stop ids are ignored before this many tokens
  double temperature = 1.0;           // 0: greedy
  double top_p = 1.0;
  int top_k = -1;                     // -1 or 0: disabled
  double min_p = 0.0;
  double presence_penalty = 0.0, frequency_penalty = 0.0, repetition_penalty = 1.0;
  std::optional<uint64_t> seed;
  std::map<int, float> logit_bias;
  std::vector<std::string> stop;      // stop strings, matched on the decoded text
  std::vector<int> stop_token_ids;    // merged with the model's EOS ids
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  int logprobs = -1;                  // -1: none; N >= 0: chosen token's logprob + top N
  bool speculate = true;              // with --speculative-config: false keeps this request off drafting
  // -1: none; N >= 0: the logprob (and rank) of every prompt token after the first, from the
  // unmodified logits of the position before it, plus the top N there (vLLM prompt_logprobs).
  int prompt_logprobs = -1;
  // Structured outputs: every sampled token must keep the output inside this grammar; EOS
  // only where it accepts; the output ends once it is complete. With grammar_start_after
  // >= 0 (the </think> id when thinking is on) the constraint starts after that token.
  std::shared_ptr<const grammar::Grammar> grammar;
  int grammar_start_after = -1;
  // Images of the prompt, preprocessed, in prompt order: the prompt then holds ONE
  // image_token_id per image (the chat template's form); the engine expands each to its
  // merged token count, runs the vision tower at the start of prefill and uses the 3-D
  // mRoPE positions (and rope_delta for the decoded tokens).
  std::shared_ptr<const std::vector<vision::ImagePatches>> images;
};

enum class FinishReason { kNone, kStop, kLength, kAbort, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", "error", ""

struct TopLogprob {
  int token;
  float logprob;
};

struct TokenOut {
  int token;
  float logprob = 0.f;                // valid when logprobs were requested
  int rank = 0;                       // 1 + tokens with a larger logprob (when logprobs were requested)
  std::vector<TopLogprob> top;        // top-N, best first
};

// A batch of what happened to one request since the consumer last looked.
struct GenEvent {
  std::vector<TokenOut> tokens;       // sampled ids, in order (EOS included when it ended the request)
  std::string text;                   // text delta (stop strings cut, incomplete UTF-8 held back)
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  std::string stop_str;               // the stop string that matched, if any
  int stop_token = -1;                // the EOS/stop id that ended it, if any
  std::string error;                  // reason == kError
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;          // of prompt_tokens, restored from the prefix cache
  int64_t completion_tokens = 0;      // cumulative
  double time_to_first_token = -1;    // seconds from submit, once known
  std::vector<double> token_times;    // now_seconds() when each of `tokens` was produced
  // prompt_logprobs: entry i is prompt token i + 1 (the first prompt token has none); sent
  // once, with the event that carries the first sampled token.
  std::vector<TokenOut> prompt_logprobs;
};

// The full result of a blocking generate().
struct GenResult {
  std::vector<int> tokens;
  std::vector<TokenOut> token_info;
  std::string text;
  FinishReason reason = FinishReason::kNone;
  std::string stop_str;
  int stop_token = -1;
  std::string error;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;          // prompt tokens restored from the prefix cache
  double time_to_first_token = -1;
};

}  // namespace qinfer::engine
