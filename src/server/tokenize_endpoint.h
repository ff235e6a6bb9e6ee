// vLLM's POST /tokenize and POST /detokenize (no /v1 prefix, as vLLM):
//   /tokenize   {"prompt": "..."} or {"messages": [...], "add_generation_prompt", "continue_final_message",
//               "chat_template_kwargs", "tools"}, "add_special_tokens", "return_token_strs"
//               -> {"count", "max_model_len", "tokens", "token_strs"}
//   /detokenize {"tokens": [...]} -> {"prompt": "..."}
// As vLLM, add_special_tokens defaults to true for a prompt and false for messages; the
// Qwen tokenizer adds no BOS, so it changes nothing for these models.
#pragma once
#include <nlohmann/json.hpp>

#include "chat/chat_format.h"
#include "server/openai_request.h"

namespace qinfer {
class Tokenizer;
class ChatTemplate;
}  // namespace qinfer

namespace qinfer::server {

struct TokenizeContext {
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;
  int64_t max_model_len = 0;
  const RequestLimits* limits = nullptr;
  nlohmann::ordered_json default_chat_template_kwargs = nlohmann::ordered_json::object();
  chat::ChatFormat format;  // the end of turn continue_final_message cuts
};

nlohmann::json tokenize_request(const nlohmann::ordered_json& body, const TokenizeContext& ctx);
nlohmann::json detokenize_request(const nlohmann::ordered_json& body, const TokenizeContext& ctx);

}  // namespace qinfer::server
