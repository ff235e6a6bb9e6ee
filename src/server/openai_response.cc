#include "server/openai_response.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "tokenizer/tokenizer.h"

namespace qinfer::server {

using json = nlohmann::json;

std::string make_request_id(const std::string& prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s = prefix;
  for (int i = 0; i < 32; ++i) s += hex[rng() & 15];
  return s;
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t reasoning_tokens, int64_t cached_tokens) {
  json u = {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
  if (reasoning_tokens >= 0) u["completion_tokens_details"] = {{"reasoning_tokens", reasoning_tokens}};
  return u;
}

std::string token_string(const Tokenizer* tok, int id) {
  if (!tok || id < 0 || id >= tok->vocab_size()) return "token_id:" + std::to_string(id);
  return tok->decode({id}, false);
}

json token_bytes(const Tokenizer* tok, int id) {
  json b = json::array();
  if (!tok) return b;
  for (unsigned char c : tok->token_text(id)) b.push_back(static_cast<int>(c));
  return b;
}

json chat_logprobs(const Tokenizer* tok, const std::vector<engine::TokenOut>& tokens) {
  json content = json::array();
  for (const auto& t : tokens) {
    json top = json::array();
    for (const auto& c : t.top) {
      top.push_back({{"token", token_string(tok, c.token)},
                     {"logprob", c.logprob},
                     {"bytes", token_bytes(tok, c.token)}});
    }
    content.push_back({{"token", token_string(tok, t.token)},
                       {"logprob", t.logprob},
                       {"bytes", token_bytes(tok, t.token)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs(const Tokenizer* tok, const std::vector<engine::TokenOut>& tokens,
                         size_t text_offset_start) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  size_t off = text_offset_start;
  for (const auto& t : tokens) {
    std::string s = token_string(tok, t.token);
    toks.push_back(s);
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& c : t.top) top[token_string(tok, c.token)] = c.logprob;
    tops.push_back(top);
    offs.push_back(off);
    off += s.size();
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

json prompt_logprobs_json(const Tokenizer* tok, const std::vector<int>& prompt,
                          const std::vector<engine::TokenOut>& lp) {
  json out = json::array();
  if (prompt.empty()) return out;
  out.push_back(nullptr);
  for (size_t i = 0; i < lp.size() && i + 1 < prompt.size(); ++i) {
    const auto& t = lp[i];
    nlohmann::ordered_json d = nlohmann::ordered_json::object();
    d[std::to_string(t.token)] = {{"logprob", t.logprob}, {"rank", t.rank}, {"decoded_token", token_string(tok, t.token)}};
    for (size_t r = 0; r < t.top.size(); ++r) {
      std::string key = std::to_string(t.top[r].token);
      if (d.contains(key)) continue;
      d[key] = {{"logprob", t.top[r].logprob}, {"rank", r + 1}, {"decoded_token", token_string(tok, t.top[r].token)}};
    }
    out.push_back(json::parse(d.dump()));
  }
  return out;
}

json echo_completion_logprobs(const Tokenizer* tok, const std::vector<int>& prompt,
                              const std::vector<engine::TokenOut>& prompt_lp,
                              const std::vector<engine::TokenOut>& generated) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  size_t off = 0;
  for (size_t i = 0; i < prompt.size(); ++i) {
    std::string s = token_string(tok, prompt[i]);
    toks.push_back(s);
    offs.push_back(off);
    off += s.size();
    if (i == 0 || i - 1 >= prompt_lp.size()) {
      lps.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    const auto& t = prompt_lp[i - 1];
    lps.push_back(std::max(t.logprob, -9999.f));
    json top = json::object();
    for (const auto& c : t.top) top[token_string(tok, c.token)] = std::max(c.logprob, -9999.f);
    tops.push_back(top);
  }
  json gen = completion_logprobs(tok, generated, off);
  for (size_t i = 0; i < gen["tokens"].size(); ++i) {
    toks.push_back(gen["tokens"][i]);
    lps.push_back(gen["token_logprobs"][i]);
    tops.push_back(gen["top_logprobs"][i]);
    offs.push_back(gen["text_offset"][i]);
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

std::string api_finish_reason(engine::FinishReason r, bool tool_calls) {
  switch (r) {
    case engine::FinishReason::kStop: return tool_calls ? "tool_calls" : "stop";
    case engine::FinishReason::kLength: return "length";
    case engine::FinishReason::kAbort: return "abort";
    case engine::FinishReason::kError: return "error";
    default: return "stop";
  }
}

json stop_reason_json(const engine::GenEvent& f, const std::vector<int>& eos_ids) {
  if (!f.stop_str.empty()) return f.stop_str;
  if (f.stop_token >= 0) {
    for (int e : eos_ids) {
      if (e == f.stop_token) return nullptr;
    }
    return f.stop_token;
  }
  return nullptr;
}

json chat_chunk(const std::string& id, int64_t created, const std::string& model, int index, const json& delta,
                const json& finish_reason, const json& logprobs) {
  json choice = {{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  return {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
          {"choices", json::array({choice})}};
}

json completion_chunk(const std::string& id, int64_t created, const std::string& model, int index,
                      const std::string& text, const json& finish_reason, const json& logprobs) {
  json choice = {{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  return {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model},
          {"choices", json::array({choice})}};
}

}  // namespace qinfer::server
