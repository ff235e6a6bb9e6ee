#include "server/openai_request.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

#include "server/api_error.h"
#include "server/structured_output.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer::server {

using json = nlohmann::ordered_json;

namespace {

const char* json_type(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a float";
    default: return "an integer";
  }
}

[[noreturn]] void wrong_type(const std::string& field, const char* want, const json& got) {
  bad_request(field, cat(field, ": must be ", want, ", got ", json_type(got)));
}

bool present(const json& b, const char* k) { return b.contains(k) && !b.at(k).is_null(); }

std::optional<double> opt_number(const json& b, const char* k) {
  if (!present(b, k)) return std::nullopt;
  const json& v = b.at(k);
  if (!v.is_number()) wrong_type(k, "a number", v);
  double d = v.get<double>();
  if (!std::isfinite(d)) bad_request(k, cat(k, ": must be finite"));
  return d;
}

// An integer field, range-checked as the JSON number it is: nothing is truncated to int
// (n: 4294967297 used to become 1, top_k: 2^32 became 0).
int64_t int_value(const json& v, const std::string& k, int64_t lo, int64_t hi) {
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
      bad_request(k, cat(k, ": must be in [", lo, ", ", hi, "], got ", v.dump()));
    }
    x = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!(std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15)) wrong_type(k, "an integer", v);
    x = static_cast<int64_t>(d);
  } else {
    wrong_type(k, "an integer", v);
  }
  if (x < lo || x > hi) bad_request(k, cat(k, ": must be in [", lo, ", ", hi, "], got ", v.dump()));
  return x;
}

std::optional<int64_t> opt_int(const json& b, const std::string& k, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
  if (!b.contains(k) || b.at(k).is_null()) return std::nullopt;
  return int_value(b.at(k), k, lo, hi);
}

std::optional<bool> opt_bool(const json& b, const char* k) {
  if (!present(b, k)) return std::nullopt;
  const json& v = b.at(k);
  if (!v.is_boolean()) wrong_type(k, "a boolean", v);
  return v.get<bool>();
}

std::optional<std::string> opt_string(const json& b, const char* k) {
  if (!present(b, k)) return std::nullopt;
  const json& v = b.at(k);
  if (!v.is_string()) wrong_type(k, "a string", v);
  return v.get<std::string>();
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void check_range(const char* k, double v, double lo, double hi, bool lo_open = false) {
  if ((lo_open ? v <= lo : v < lo) || v > hi) {
    bad_request(k, cat(k, ": must be in ", lo_open ? "(" : "[", num(lo), ", ", num(hi), "], got ", num(v)));
  }
}

// Fields read by parse_sampling / parse_stream, and harmless ones (user, metadata).
const char* const kCommonFields[] = {
    "model", "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
    "repetition_penalty", "seed", "stop", "stop_token_ids", "logit_bias", "ignore_eos", "min_tokens",
    "include_stop_str_in_output", "skip_special_tokens", "n", "best_of", "stream", "stream_options",
    "max_tokens", "user", "metadata",
    // structured outputs (server/structured_output.cc)
    "response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice", "guided_grammar",
    "guided_decoding_backend", "guided_whitespace_pattern"};
const char* const kChatFields[] = {
    "messages", "max_completion_tokens", "logprobs", "top_logprobs", "chat_template_kwargs", "reasoning_effort",
    "include_reasoning", "add_generation_prompt", "continue_final_message", "tools",
    "tool_choice", "parallel_tool_calls", "prompt_logprobs", "mm_processor_kwargs"};
const char* const kCompletionFields[] = {"prompt", "suffix", "echo", "logprobs", "return_token_ids", "prompt_logprobs"};

std::string check_model(const json& body, const RequestLimits& limits) {
  auto m = opt_string(body, "model");
  if (!m) return limits.model_names.empty() ? std::string() : limits.model_names.front();
  for (const auto& name : limits.model_names) {
    if (*m == name) return *m;
  }
  throw ApiError(404, cat("The model `", *m, "` does not exist."), "model", "model_not_found");
}

// Fields shared by chat and completions.
void parse_sampling(const json& b, const RequestLimits& limits, engine::GenParams& g, int& n) {
  const SamplingDefaults& d = limits.defaults;
  g.temperature = opt_number(b, "temperature").value_or(d.temperature.value_or(1.0));
  check_range("temperature", g.temperature, 0, 100);
  g.top_p = opt_number(b, "top_p").value_or(d.top_p.value_or(1.0));
  check_range("top_p", g.top_p, 0, 1, true);
  g.top_k = static_cast<int>(opt_int(b, "top_k", -1, INT32_MAX).value_or(d.top_k.value_or(-1)));
  g.min_p = opt_number(b, "min_p").value_or(d.min_p.value_or(0.0));
  check_range("min_p", g.min_p, 0, 1);
  g.presence_penalty = opt_number(b, "presence_penalty").value_or(0.0);
  check_range("presence_penalty", g.presence_penalty, -2, 2);
  g.frequency_penalty = opt_number(b, "frequency_penalty").value_or(0.0);
  check_range("frequency_penalty", g.frequency_penalty, -2, 2);
  g.repetition_penalty = opt_number(b, "repetition_penalty").value_or(d.repetition_penalty.value_or(1.0));
  if (g.repetition_penalty <= 0 || g.repetition_penalty > 100) {
    bad_request("repetition_penalty", "repetition_penalty: must be in (0, 100]");
  }
  if (auto s = opt_int(b, "seed")) g.seed = static_cast<uint64_t>(*s);  // vLLM: a signed 64-bit seed
  if (present(b, "stop")) {
    const json& s = b.at("stop");
    if (s.is_string()) {
      if (!s.get<std::string>().empty()) g.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (size_t i = 0; i < s.size(); ++i) {
        if (!s[i].is_string()) wrong_type(cat("stop[", i, "]"), "a string", s[i]);
        if (!s[i].get<std::string>().empty()) g.stop.push_back(s[i].get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or an array of strings", s);
    }
  }
  if (present(b, "stop_token_ids")) {
    const json& s = b.at("stop_token_ids");
    if (!s.is_array()) wrong_type("stop_token_ids", "an array of integers", s);
    for (size_t i = 0; i < s.size(); ++i) {
      if (!s[i].is_number_integer()) wrong_type(cat("stop_token_ids[", i, "]"), "an integer", s[i]);
      g.stop_token_ids.push_back(static_cast<int>(int_value(s[i], cat("stop_token_ids[", i, "]"), 0, INT32_MAX)));
    }
  }
  if (present(b, "logit_bias")) {
    const json& lb = b.at("logit_bias");
    if (!lb.is_object()) wrong_type("logit_bias", "an object of token id -> bias", lb);
    for (auto it = lb.begin(); it != lb.end(); ++it) {
      std::string field = cat("logit_bias[", it.key(), "]");
      const std::string& key = it.key();
      // Digits only, at most 10 of them, and within int32: "4294967296" used to become token 0.
      bool digits = !key.empty() && key.size() <= 10 &&
                    std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
      long long id = digits ? std::stoll(key) : -1;
      if (!digits || id > INT32_MAX) bad_request(field, cat(field, ": key must be a token id"));
      if (!it.value().is_number()) wrong_type(field, "a number", it.value());
      g.logit_bias[static_cast<int>(id)] = std::max(-100.f, std::min(100.f, it.value().get<float>()));
    }
  }
  g.ignore_eos = opt_bool(b, "ignore_eos").value_or(false);
  g.min_tokens = opt_int(b, "min_tokens", 0, INT32_MAX).value_or(0);
  g.include_stop_str_in_output = opt_bool(b, "include_stop_str_in_output").value_or(false);
  g.skip_special_tokens = opt_bool(b, "skip_special_tokens").value_or(true);
  n = static_cast<int>(opt_int(b, "n", 1, kMaxN).value_or(1));
  if (present(b, "best_of")) {
    auto bo = opt_int(b, "best_of", 1, kMaxN);
    if (*bo != n) bad_request("best_of", "best_of: only best_of == n is supported");
  }
}

// vLLM's prompt_logprobs (0..20 here; -1, the whole vocabulary, is refused). Not with stream.
int parse_prompt_logprobs(const json& b, bool stream) {
  auto v = opt_int(b, "prompt_logprobs");
  if (!v) return -1;
  if (*v < 0 || *v > 20) bad_request("prompt_logprobs", cat("prompt_logprobs: must be in [0, 20], got ", *v));
  if (stream) bad_request("prompt_logprobs", "prompt_logprobs: `prompt_logprobs` are not available when `stream=True`.");
  return static_cast<int>(*v);
}

void parse_stream(const json& b, bool& stream, bool& include_usage, bool& continuous) {
  stream = opt_bool(b, "stream").value_or(false);
  if (present(b, "stream_options")) {
    const json& so = b.at("stream_options");
    if (!so.is_object()) wrong_type("stream_options", "an object", so);
    if (!stream) bad_request("stream_options", "stream_options: only allowed when stream is true");
    include_usage = opt_bool(so, "include_usage").value_or(false);
    continuous = opt_bool(so, "continuous_usage_stats").value_or(false);
  }
}

int64_t parse_max_tokens(const json& b, const char* first, const char* second, const SamplingDefaults& d) {
  std::optional<int64_t> v;
  if (first) v = opt_int(b, first, 1, INT64_MAX);
  if (!v) v = opt_int(b, second, 1, INT64_MAX);
  if (!v && d.max_tokens) return *d.max_tokens;
  return v.value_or(-1);
}

// The URL of an image part: `key` is an object {"url": ...} or (OpenAI's input_image, vLLM's
// shorthand) the URL string itself.
std::string image_part_url(const json& p, const std::string& pf, const char* key) {
  const std::string f = cat(pf, ".", key);
  if (!p.contains(key) || p[key].is_null()) bad_request(f, cat(f, ": is required for a '", p["type"].get<std::string>(), "' part"));
  const json& v = p[key];
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_object()) wrong_type(f, "an object {\"url\": ...} or a URL string", v);
  if (!v.contains("url") || !v["url"].is_string()) bad_request(f + ".url", cat(f, ".url: must be a string"));
  return v["url"].get<std::string>();
}

// Validates one message's content and returns it as the chat template sees it: each image
// part becomes {"type": "image"} (the template writes one <|image_pad|> for it) and its URL
// is added to `images`.
json check_content(const json& c, const std::string& field, bool allow_null, std::vector<ImageRef>& images) {
  if (c.is_string()) return c;
  if (c.is_null()) {
    if (!allow_null) bad_request(field, cat(field, ": is required"));
    return c;
  }
  if (!c.is_array()) wrong_type(field, "a string or an array of content parts", c);
  json out = json::array();
  for (size_t i = 0; i < c.size(); ++i) {
    std::string pf = cat(field, "[", i, "]");
    const json& p = c[i];
    if (!p.is_object()) wrong_type(pf, "an object", p);
    auto type = opt_string(p, "type");
    if (!type) bad_request(pf + ".type", cat(pf, ".type: is required"));
    if (*type == "text") {
      if (!p.contains("text") || !p["text"].is_string()) bad_request(pf + ".text", cat(pf, ".text: must be a string"));
      out.push_back(p);
    } else if (*type == "image_url" || *type == "input_image" || *type == "image") {
      const char* key = *type == "image" && !p.contains("image_url") ? "image" : "image_url";
      if (*type == "input_image" && p.contains("file_id") && !p.contains("image_url")) {
        bad_request(pf + ".file_id", cat(pf, ".file_id: uploaded files are not supported; send image_url "
                                             "(a data: or http(s) URL)"));
      }
      images.push_back({cat(pf, ".", key), image_part_url(p, pf, key)});
      out.push_back({{"type", "image"}});
    } else if (*type == "video_url" || *type == "video" || *type == "input_video") {
      bad_request(pf + ".type", cat(pf, ".type: video input ('", *type, "') is not supported: this server has no "
                                    "video processor (frame sampling and the video_pad expansion are missing); "
                                    "send the frames as image_url parts"));
    } else {
      bad_request(pf + ".type", cat(pf, ".type: unsupported content part type '", *type, "'"));
    }
  }
  return out;
}

json normalise_messages(const json& msgs, std::vector<ImageRef>& images) {
  if (!msgs.is_array()) wrong_type("messages", "an array", msgs);
  if (msgs.empty()) bad_request("messages", "messages: must contain at least one message");
  json out = json::array();
  for (size_t i = 0; i < msgs.size(); ++i) {
    std::string f = cat("messages[", i, "]");
    const json& m = msgs[i];
    if (!m.is_object()) wrong_type(f, "an object", m);
    if (!m.contains("role") || !m["role"].is_string()) bad_request(f + ".role", cat(f, ".role: must be a string"));
    json nm = m;
    std::string role = m["role"];
    if (role == "developer") nm["role"] = role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      bad_request(f + ".role", cat(f, ".role: unknown role '", role, "'"));
    }
    json content = m.contains("content") ? m["content"] : json(nullptr);
    json checked = check_content(content, f + ".content", role == "assistant", images);
    if (m.contains("content")) nm["content"] = std::move(checked);
    if (role == "assistant") {
      if (m.contains("reasoning") && !m["reasoning"].is_null() && !m.contains("reasoning_content")) {
        nm["reasoning_content"] = m["reasoning"];
      }
      if (nm.contains("reasoning_content") && !nm["reasoning_content"].is_null() &&
          !nm["reasoning_content"].is_string()) {
        wrong_type(f + ".reasoning_content", "a string", nm["reasoning_content"]);
      }
      if (nm.contains("reasoning_content") && nm["reasoning_content"].is_string()) {
        nm["reasoning"] = nm["reasoning_content"];
      }
      if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
        const json& tcs = m["tool_calls"];
        if (!tcs.is_array()) wrong_type(f + ".tool_calls", "an array", tcs);
        for (size_t j = 0; j < tcs.size(); ++j) {
          std::string tf = cat(f, ".tool_calls[", j, "]");
          if (!tcs[j].is_object() || !tcs[j].contains("function") || !tcs[j]["function"].is_object()) {
            bad_request(tf + ".function", cat(tf, ".function: must be an object"));
          }
          const json& fn = tcs[j]["function"];
          if (!fn.contains("name") || !fn["name"].is_string()) {
            bad_request(tf + ".function.name", cat(tf, ".function.name: must be a string"));
          }
          json args = fn.contains("arguments") ? fn["arguments"] : json(nullptr);
          if (args.is_string()) {
            std::string s = args;
            if (s.find_first_not_of(" \t\r\n") == std::string::npos) {
              args = json::object();
            } else {
              try {
                args = parse_ordered_json(s, tf + ".function.arguments");
              } catch (const JsonError& e) {
                bad_request(tf + ".function.arguments",
                            e.too_deep() ? e.what() : cat(tf, ".function.arguments: not valid JSON"));
              }
            }
          } else if (args.is_null()) {
            args = json::object();
          }
          if (!args.is_object()) wrong_type(tf + ".function.arguments", "a JSON object", args);
          nm["tool_calls"][j]["function"]["arguments"] = args;
        }
      }
    }
    out.push_back(std::move(nm));
  }
  return out;
}

void parse_tools(const json& b, ChatRequest& r) {
  if (present(b, "tools")) {
    const json& t = b.at("tools");
    if (!t.is_array()) wrong_type("tools", "an array", t);
    if (t.empty()) bad_request("tools", "tools: must not be an empty list");
    for (size_t i = 0; i < t.size(); ++i) {
      std::string f = cat("tools[", i, "]");
      if (!t[i].is_object()) wrong_type(f, "an object", t[i]);
      auto type = opt_string(t[i], "type").value_or("function");
      if (type != "function") bad_request(f + ".type", cat(f, ".type: only 'function' tools are supported"));
      if (!t[i].contains("function") || !t[i]["function"].is_object()) {
        bad_request(f + ".function", cat(f, ".function: must be an object"));
      }
      const json& fn = t[i]["function"];
      if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty()) {
        bad_request(f + ".function.name", cat(f, ".function.name: must be a non-empty string"));
      }
      if (fn.contains("parameters") && !fn["parameters"].is_null() && !fn["parameters"].is_object()) {
        wrong_type(f + ".function.parameters", "an object", fn["parameters"]);
      }
    }
    r.tools = t;
  }
  r.tool_choice = r.tools.is_array() ? ToolChoice::kAuto : ToolChoice::kNone;
  if (present(b, "tool_choice")) {
    const json& tc = b.at("tool_choice");
    if (tc.is_string()) {
      std::string s = tc;
      if (s == "none") r.tool_choice = ToolChoice::kNone;
      else if (s == "auto") r.tool_choice = ToolChoice::kAuto;
      else if (s == "required") r.tool_choice = ToolChoice::kRequired;
      else bad_request("tool_choice", cat("tool_choice: must be 'none', 'auto', 'required' or a named function, got '", s, "'"));
    } else if (tc.is_object()) {
      if (!tc.contains("function") || !tc["function"].is_object() || !tc["function"].contains("name") ||
          !tc["function"]["name"].is_string()) {
        bad_request("tool_choice", "tool_choice: a named tool choice needs function.name");
      }
      r.tool_choice = ToolChoice::kNamed;
      r.tool_choice_name = tc["function"]["name"];
    } else {
      wrong_type("tool_choice", "a string or an object", tc);
    }
    if ((r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kNamed) && !r.tools.is_array()) {
      bad_request("tool_choice", "tool_choice: 'required' or a named function needs tools");
    }
    if (r.tool_choice == ToolChoice::kAuto && !r.tools.is_array()) r.tool_choice = ToolChoice::kNone;
    if (r.tool_choice == ToolChoice::kNamed) {
      bool found = false;
      for (const auto& t : r.tools) found = found || t["function"]["name"] == r.tool_choice_name;
      if (!found) {
        bad_request("tool_choice", cat("tool_choice: function '", r.tool_choice_name, "' is not among the tools"));
      }
    }
  }
  r.parallel_tool_calls = opt_bool(b, "parallel_tool_calls").value_or(true);
}

}  // namespace

std::vector<std::string> ignored_fields(const json& body, bool chat) {
  std::vector<std::string> out;
  if (!body.is_object()) return out;
  auto known = [chat](const std::string& k) {
    for (const char* f : kCommonFields) if (k == f) return true;
    if (chat) {
      for (const char* f : kChatFields) if (k == f) return true;
    } else {
      for (const char* f : kCompletionFields) if (k == f) return true;
    }
    return false;
  };
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!known(it.key())) out.push_back(it.key());
  }
  return out;
}

SamplingDefaults SamplingDefaults::from_generation_config(const json& gc) {
  SamplingDefaults d;
  if (!gc.is_object()) return d;
  if (gc.contains("temperature") && gc["temperature"].is_number()) d.temperature = gc["temperature"].get<double>();
  if (gc.contains("top_p") && gc["top_p"].is_number()) d.top_p = gc["top_p"].get<double>();
  if (gc.contains("top_k") && gc["top_k"].is_number_integer() && gc["top_k"].get<int64_t>() >= -1 &&
      gc["top_k"].get<int64_t>() <= INT32_MAX)
    d.top_k = gc["top_k"].get<int>();
  if (gc.contains("min_p") && gc["min_p"].is_number()) d.min_p = gc["min_p"].get<double>();
  if (gc.contains("repetition_penalty") && gc["repetition_penalty"].is_number()) {
    d.repetition_penalty = gc["repetition_penalty"].get<double>();
  }
  if (gc.contains("max_new_tokens") && gc["max_new_tokens"].is_number_integer() &&
      gc["max_new_tokens"].get<int64_t>() >= 1) {
    d.max_tokens = gc["max_new_tokens"].get<int64_t>();
  }
  return d;
}

ChatRequest parse_chat_request(const json& b, const RequestLimits& limits) {
  if (!b.is_object()) bad_request("", "request body must be a JSON object");
  ChatRequest r;
  r.model = check_model(b, limits);
  if (!b.contains("messages")) bad_request("messages", "messages: is required");
  r.messages = normalise_messages(b["messages"], r.images);
  r.image_count = static_cast<int>(r.images.size());
  if (r.image_count > limits.max_images_per_prompt) {
    bad_request("messages", cat("messages: at most ", limits.max_images_per_prompt,
                                " image(s) may be provided in one prompt; this request has ", r.image_count));
  }
  parse_tools(b, r);
  parse_stream(b, r.stream, r.include_usage, r.continuous_usage);
  parse_sampling(b, limits, r.gen, r.n);
  r.gen.max_tokens = parse_max_tokens(b, "max_completion_tokens", "max_tokens", limits.defaults);
  r.logprobs = opt_bool(b, "logprobs").value_or(false);
  auto top = opt_int(b, "top_logprobs", 0, 20);
  if (top) {
    if (!r.logprobs) bad_request("top_logprobs", "top_logprobs: requires logprobs to be true");
  }
  r.gen.logprobs = r.logprobs ? static_cast<int>(top.value_or(0)) : -1;
  r.gen.prompt_logprobs = parse_prompt_logprobs(b, r.stream);
  if (present(b, "chat_template_kwargs")) {
    if (!b["chat_template_kwargs"].is_object()) wrong_type("chat_template_kwargs", "an object", b["chat_template_kwargs"]);
    r.chat_template_kwargs = b["chat_template_kwargs"];
    for (const char* k : kReservedTemplateKwargs) {
      if (r.chat_template_kwargs.contains(k)) {
        bad_request(cat("chat_template_kwargs.", k),
                    cat("chat_template_kwargs.", k, ": is reserved (set by the request itself) and cannot be overridden"));
      }
    }
  }
  if (r.chat_template_kwargs.contains("enable_thinking")) {
    const json& et = r.chat_template_kwargs["enable_thinking"];
    if (!et.is_boolean()) wrong_type("chat_template_kwargs.enable_thinking", "a boolean", et);
    r.enable_thinking = et.get<bool>();
  } else if (auto effort = opt_string(b, "reasoning_effort")) {
    r.enable_thinking = *effort != "none";
    r.chat_template_kwargs["enable_thinking"] = r.enable_thinking;
  }
  r.include_reasoning = opt_bool(b, "include_reasoning").value_or(true);
  r.add_generation_prompt = opt_bool(b, "add_generation_prompt").value_or(true);
  r.continue_final_message = opt_bool(b, "continue_final_message").value_or(false);
  if (r.add_generation_prompt && r.continue_final_message) {
    bad_request("continue_final_message",
                "continue_final_message: cannot be true together with add_generation_prompt");
  }
  if (r.continue_final_message && r.messages.back()["role"] != "assistant") {
    bad_request("continue_final_message", "continue_final_message: the last message must be an assistant message");
  }
  if (present(b, "mm_processor_kwargs")) {
    if (!b["mm_processor_kwargs"].is_object()) wrong_type("mm_processor_kwargs", "an object", b["mm_processor_kwargs"]);
    r.mm_processor_kwargs = b["mm_processor_kwargs"];
  }
  r.structured = parse_structured_output(b);
  return r;
}

CompletionRequest parse_completion_request(const json& b, const RequestLimits& limits) {
  if (!b.is_object()) bad_request("", "request body must be a JSON object");
  CompletionRequest r;
  r.model = check_model(b, limits);
  if (!b.contains("prompt") || b["prompt"].is_null()) bad_request("prompt", "prompt: is required");
  const json& p = b["prompt"];
  auto ids_of = [](const json& a, const std::string& field) {
    std::vector<int> ids;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_number_integer()) wrong_type(cat(field, "[", i, "]"), "an integer token id", a[i]);
      ids.push_back(static_cast<int>(int_value(a[i], cat(field, "[", i, "]"), 0, INT32_MAX)));
    }
    if (ids.empty()) bad_request(field, cat(field, ": must not be empty"));
    return ids;
  };
  if (p.is_string()) {
    r.prompt_texts.push_back(p);
  } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
    r.prompt_ids.push_back(ids_of(p, "prompt"));
  } else if (p.is_array() && !p.empty()) {
    bool strings = p[0].is_string();
    for (size_t i = 0; i < p.size(); ++i) {
      std::string f = cat("prompt[", i, "]");
      if (strings) {
        if (!p[i].is_string()) wrong_type(f, "a string", p[i]);
        r.prompt_texts.push_back(p[i]);
      } else {
        if (!p[i].is_array()) wrong_type(f, "an array of token ids", p[i]);
        r.prompt_ids.push_back(ids_of(p[i], f));
      }
    }
  } else {
    bad_request("prompt", "prompt: must be a non-empty string, array of strings, or array of token ids");
  }
  for (const auto& t : r.prompt_texts) {
    if (t.empty()) bad_request("prompt", "prompt: must not be empty");
  }
  // As vLLM's serving_completion: "suffix is not currently supported" (no FIM template here).
  if (present(b, "suffix")) bad_request("suffix", "suffix: is not currently supported");
  parse_stream(b, r.stream, r.include_usage, r.continuous_usage);
  parse_sampling(b, limits, r.gen, r.n);
  if (r.num_prompts() * static_cast<size_t>(r.n) > static_cast<size_t>(kMaxSequencesPerRequest)) {
    bad_request(r.num_prompts() > 1 ? "prompt" : "n",
                cat("prompt: ", r.num_prompts(), " prompts x n = ", r.n, " would start ", r.num_prompts() * r.n,
                    " sequences; at most ", kMaxSequencesPerRequest, " are allowed per request"));
  }
  r.gen.max_tokens = parse_max_tokens(b, nullptr, "max_tokens", limits.defaults);
  if (!present(b, "max_tokens") && !limits.defaults.max_tokens) r.gen.max_tokens = 16;  // OpenAI default
  r.echo = opt_bool(b, "echo").value_or(false);
  if (auto lp = opt_int(b, "logprobs", 0, 20)) {
    r.gen.logprobs = static_cast<int>(*lp);
  }
  r.gen.prompt_logprobs = parse_prompt_logprobs(b, r.stream);
  // As vLLM: echo with logprobs asks for the prompt's logprobs too (same top count).
  r.echo_logprobs = r.echo && r.gen.logprobs >= 0;
  if (r.echo_logprobs && r.gen.prompt_logprobs < 0) r.gen.prompt_logprobs = r.gen.logprobs;
  r.structured = parse_structured_output(b);
  return r;
}

}  // namespace qinfer::server
