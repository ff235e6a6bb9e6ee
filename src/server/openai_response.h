// OpenAI-shaped response objects: completion / chat.completion bodies, SSE chunks,
// usage, logprobs. Strings that might hold broken UTF-8 are dumped with replacement.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gen_params.h"

namespace qinfer {
class Tokenizer;
}

namespace qinfer::server {

// "chatcmpl-" / "cmpl-" + 32 hex chars.
std::string make_request_id(const std::string& prefix);
int64_t unix_time();

// JSON text of j; invalid UTF-8 in strings is replaced, never thrown.
std::string dump_json(const nlohmann::json& j);
std::string sse_event(const nlohmann::json& j);   // "data: {...}\n\n"
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// prompt_tokens_details.cached_tokens is always there, as OpenAI returns it.
nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t reasoning_tokens = -1,
                          int64_t cached_tokens = 0);

// The text of one token for logprobs ("token_id:N" without a tokenizer) and its raw bytes.
std::string token_string(const Tokenizer* tok, int id);
nlohmann::json token_bytes(const Tokenizer* tok, int id);

// Chat logprobs: {"content": [{"token","logprob","bytes","top_logprobs":[...]}]}.
nlohmann::json chat_logprobs(const Tokenizer* tok, const std::vector<engine::TokenOut>& tokens);
// Legacy completions logprobs: {"tokens","token_logprobs","top_logprobs","text_offset"}.
nlohmann::json completion_logprobs(const Tokenizer* tok, const std::vector<engine::TokenOut>& tokens,
                                   size_t text_offset_start);

// vLLM's prompt_logprobs: [null, {"<id>": {"logprob", "rank", "decoded_token"}, ...}, ...], one
// entry per prompt token; each dict holds the prompt token itself first, then the top N.
nlohmann::json prompt_logprobs_json(const Tokenizer* tok, const std::vector<int>& prompt,
                                    const std::vector<engine::TokenOut>& lp);
// Completions logprobs for echo: the prompt's tokens (the first with null logprob and null
// top_logprobs, as vLLM) followed by the generated ones; text offsets from 0.
nlohmann::json echo_completion_logprobs(const Tokenizer* tok, const std::vector<int>& prompt,
                                        const std::vector<engine::TokenOut>& prompt_lp,
                                        const std::vector<engine::TokenOut>& generated);

// finish_reason for the API: "stop" / "length" / "tool_calls"; an abort or error maps to
// "abort"/"error" (vLLM reports "abort" for aborted requests).
std::string api_finish_reason(engine::FinishReason r, bool tool_calls);

// stop_reason: the stop string, or the stop token id (EOS: null, as vLLM).
nlohmann::json stop_reason_json(const engine::GenEvent& finish, const std::vector<int>& eos_ids);

nlohmann::json chat_chunk(const std::string& id, int64_t created, const std::string& model, int index,
                          const nlohmann::json& delta, const nlohmann::json& finish_reason = nullptr,
                          const nlohmann::json& logprobs = nullptr);
nlohmann::json completion_chunk(const std::string& id, int64_t created, const std::string& model, int index,
                                const std::string& text, const nlohmann::json& finish_reason = nullptr,
                                const nlohmann::json& logprobs = nullptr);

}  // namespace qinfer::server
