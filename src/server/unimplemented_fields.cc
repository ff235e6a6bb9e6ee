#include "server/unimplemented_fields.h"

#include "server/api_error.h"

namespace qinfer::server {

namespace {

using ojson = nlohmann::ordered_json;

struct Field {
  const char* name;
  const char* why;
};

// Neutral values (null, false, empty) are accepted: clients often send defaults.
bool neutral(const ojson& v) {
  if (v.is_null()) return true;
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_array() || v.is_object() || v.is_string()) return v.empty();
  return false;
}

const Field kBoth[] = {
    {"use_beam_search", "beam search is not implemented"},
    {"allowed_token_ids", "allowed_token_ids is not implemented"},
    {"bad_words", "bad_words is not implemented"},
    {"truncate_prompt_tokens", "prompt truncation is not implemented"},
    {"logits_processors", "custom logits processors are not implemented"},
    {"kv_transfer_params", "KV transfer is not implemented"},
    {"vllm_xargs", "vllm_xargs is not implemented"},
    {"return_tokens_as_token_ids", "return_tokens_as_token_ids is not implemented"},
    {"priority", "request priorities are not implemented (the queue is first come, first served)"},
    {"prediction", "predicted outputs are not implemented"},
    {"audio", "audio output is not implemented"},
};
const Field kCompletion[] = {
    {"mm_processor_kwargs", "mm_processor_kwargs is only used with images, which completions do not take"},
};
const Field kChat[] = {
    {"chat_template", "a per-request chat template is not accepted; start the server with --chat-template"},
    {"documents", "documents for RAG templates are not implemented"},
    {"functions", "the legacy functions field is not implemented; use tools"},
    {"function_call", "the legacy function_call field is not implemented; use tool_choice"},
    {"web_search_options", "web search is not implemented"},
    {"echo", "echo on chat completions is not implemented"},
};

void check(const ojson& body, const Field& f) {
  if (!body.contains(f.name) || neutral(body[f.name])) return;
  throw ApiError(400, std::string(f.name) + ": " + f.why + " by this server", f.name);
}

}  // namespace

void reject_unimplemented_fields(const ojson& body, bool chat) {
  if (!body.is_object()) return;
  for (const auto& f : kBoth) check(body, f);
  if (chat) {
    for (const auto& f : kChat) check(body, f);
  } else {
    for (const auto& f : kCompletion) check(body, f);
  }
  // spaces_between_special_tokens defaults to true; false would change the text.
  if (body.contains("spaces_between_special_tokens") && body["spaces_between_special_tokens"] == false) {
    throw ApiError(400, "spaces_between_special_tokens: false is not implemented by this server",
                   "spaces_between_special_tokens");
  }
  if (body.contains("modalities") && body["modalities"].is_array()) {
    for (const auto& m : body["modalities"]) {
      if (m != "text") throw ApiError(400, "modalities: only \"text\" output is implemented", "modalities");
    }
  }
}

}  // namespace qinfer::server
