#include "server/tokenize_endpoint.h"

#include <algorithm>

#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/openai_response.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qinfer::server {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

namespace {

void check_model(const ojson& b, const RequestLimits& limits) {
  if (!b.contains("model") || b["model"].is_null()) return;
  if (!b["model"].is_string()) bad_request("model", "model: must be a string");
  for (const auto& n : limits.model_names) {
    if (b["model"] == n) return;
  }
  throw ApiError(404, cat("The model `", b["model"].get<std::string>(), "` does not exist."), "model",
                 "model_not_found");
}

bool opt_bool(const ojson& b, const char* k, bool def) {
  if (!b.contains(k) || b[k].is_null()) return def;
  if (!b[k].is_boolean()) bad_request(k, cat(k, ": must be a boolean"));
  return b[k].get<bool>();
}

}  // namespace

json tokenize_request(const ojson& b, const TokenizeContext& ctx) {
  if (!b.is_object()) bad_request("", "request body must be a JSON object");
  check_model(b, *ctx.limits);
  if (!ctx.tokenizer) {
    throw ApiError(400, "this model has no tokenizer (token ids only), so /tokenize is unavailable");
  }
  bool has_prompt = b.contains("prompt"), has_messages = b.contains("messages");
  if (has_prompt == has_messages) bad_request("prompt", "exactly one of prompt or messages is required");
  bool token_strs = opt_bool(b, "return_token_strs", false);
  std::string text;
  if (has_prompt) {
    if (!b["prompt"].is_string()) bad_request("prompt", "prompt: must be a string");
    opt_bool(b, "add_special_tokens", true);  // validated; the Qwen tokenizer adds no BOS
    text = b["prompt"].get<std::string>();
  } else {
    if (!ctx.chat_template) {
      throw ApiError(400, "this model has no chat template, so messages cannot be tokenized", "messages");
    }
    opt_bool(b, "add_special_tokens", false);
    ChatRequest r = parse_chat_request(b, *ctx.limits);
    text = render_chat_prompt(r, *ctx.chat_template, ctx.format, ctx.default_chat_template_kwargs);
  }
  // Tokenized only up to the context length, as prompts are: a longer text is refused without
  // encoding the rest of it (the body may hold 64 MiB).
  const char* field = has_prompt ? "prompt" : "messages";
  const size_t limit = static_cast<size_t>(std::max<int64_t>(ctx.max_model_len, 1));
  Tokenizer::Bounded enc = ctx.tokenizer->encode_bounded(text, true, limit);
  if (enc.tokens > limit) {
    bad_request(field, cat(field, ": ", enc.complete ? "" : "at least ", enc.tokens,
                           " tokens, more than this model's maximum context length of ", ctx.max_model_len,
                           " tokens; /tokenize counts up to the context length"));
  }
  const std::vector<int>& ids = enc.ids;
  json tokens = json::array();
  for (int id : ids) tokens.push_back(id);
  json out = {{"count", ids.size()}, {"max_model_len", ctx.max_model_len}, {"tokens", tokens}};
  if (token_strs) {
    json strs = json::array();
    for (int id : ids) strs.push_back(token_string(ctx.tokenizer, id));
    out["token_strs"] = strs;
  } else {
    out["token_strs"] = nullptr;
  }
  return out;
}

json detokenize_request(const ojson& b, const TokenizeContext& ctx) {
  if (!b.is_object()) bad_request("", "request body must be a JSON object");
  check_model(b, *ctx.limits);
  if (!ctx.tokenizer) throw ApiError(400, "this model has no tokenizer (token ids only), so /detokenize is unavailable");
  if (!b.contains("tokens") || !b["tokens"].is_array()) bad_request("tokens", "tokens: must be an array of token ids");
  std::vector<int> ids;
  const ojson& t = b["tokens"];
  // No sequence is longer than the context: more ids are refused before decoding any.
  if (ctx.max_model_len > 0 && t.size() > static_cast<size_t>(ctx.max_model_len)) {
    bad_request("tokens", cat("tokens: ", t.size(), " token ids, more than this model's maximum context length of ",
                              ctx.max_model_len, " tokens"));
  }
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_number_integer()) bad_request(cat("tokens[", i, "]"), cat("tokens[", i, "]: must be an integer token id"));
    int64_t id = t[i].get<int64_t>();
    if (id < 0 || id >= ctx.tokenizer->vocab_size()) {
      bad_request(cat("tokens[", i, "]"), cat("tokens[", i, "]: token id ", id, " is outside the vocabulary [0, ",
                                              ctx.tokenizer->vocab_size(), ")"));
    }
    ids.push_back(static_cast<int>(id));
  }
  return {{"prompt", ctx.tokenizer->decode(ids, false)}};
}

}  // namespace qinfer::server
