#include "server/generation_job.h"

#include <algorithm>
#include <cstdio>

#include "server/api_error.h"
#include "server/metrics.h"
#include "server/openai_response.h"
#include "util/log.h"

namespace qinfer::server {

using json = nlohmann::json;

GenerationJob::GenerationJob(JobConfig cfg, std::vector<JobChoice> choices, Metrics* metrics)
    : cfg_(std::move(cfg)), choices_(std::move(choices)), metrics_(metrics), start_(now_seconds()) {}

GenerationJob::~GenerationJob() { cancel(); }

void GenerationJob::cancel() {
  for (auto& c : choices_) {
    if (!c.done) c.stream->cancel();
  }
}

bool GenerationJob::failed() const {
  for (const auto& c : choices_) {
    if (c.done && c.finish.reason == engine::FinishReason::kError) return true;
  }
  return false;
}

std::string GenerationJob::error_message() const {
  for (const auto& c : choices_) {
    if (c.done && c.finish.reason == engine::FinishReason::kError) return c.finish.error;
  }
  return {};
}

bool GenerationJob::check_deadline() {
  if (timed_out_) return true;
  if (cfg_.deadline <= 0 || now_seconds() < cfg_.deadline) return false;
  bool all = std::all_of(choices_.begin(), choices_.end(), [](const JobChoice& x) { return x.done; });
  if (all) return false;
  timed_out_ = true;
  log_warn("[", cfg_.record ? cfg_.record->id : cfg_.id, "] ", timeout_message());
  cancel();
  return true;
}

std::string GenerationJob::timeout_message() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", cfg_.timeout_s);
  return std::string("request timed out after ") + buf + " s (--request-timeout); generation was stopped";
}

bool GenerationJob::take(size_t i, double wait_s, engine::GenEvent& ev) {
  JobChoice& c = choices_[i];
  if (c.done || !c.stream->take(ev, wait_s)) return false;
  c.tokens.insert(c.tokens.end(), ev.tokens.begin(), ev.tokens.end());
  c.text += ev.text;
  c.cached_tokens = ev.cached_tokens;
  if (!ev.prompt_logprobs.empty()) {
    c.prompt_lp = ev.prompt_logprobs;
    c.has_prompt_lp = true;
  }
  if (cfg_.record) cfg_.record->generation_tokens += static_cast<int64_t>(ev.tokens.size());
  if (!ttft_seen_ && ev.time_to_first_token >= 0 && metrics_) {
    ttft_seen_ = true;
    metrics_->observe_ttft(ev.time_to_first_token);
  }
  for (double t : ev.token_times) {
    if (c.last_token_time >= 0 && metrics_) metrics_->observe_inter_token(t - c.last_token_time);
    if (c.first_token_time < 0) c.first_token_time = t;
    c.last_token_time = t;
  }
  if (ev.finished) {
    c.done = true;
    c.finish = ev;
    if (metrics_) metrics_->count_finish(engine::finish_reason_name(ev.reason));
    bool all = std::all_of(choices_.begin(), choices_.end(), [](const JobChoice& x) { return x.done; });
    if (all && metrics_ && !request_observed_) {
      request_observed_ = true;
      metrics_->observe_latency(now_seconds() - start_);
      int64_t prompt = 0, generated = 0;
      double first = -1, last = -1;
      for (const auto& x : choices_) {
        prompt += x.prompt_tokens;
        generated += static_cast<int64_t>(x.tokens.size());
        if (x.first_token_time >= 0 && (first < 0 || x.first_token_time < first)) first = x.first_token_time;
        last = std::max(last, x.last_token_time);
      }
      metrics_->observe_request(prompt, generated, cfg_.n, cfg_.max_tokens);
      if (first >= 0) metrics_->observe_decode_time(last - first);
    }
  }
  return true;
}

int64_t GenerationJob::reasoning_tokens(const JobChoice& c) const {
  if (cfg_.think_end_id < 0 || cfg_.reasoning_closed) return 0;
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    if (c.tokens[i].token == cfg_.think_end_id) return static_cast<int64_t>(i);
  }
  int64_t n = static_cast<int64_t>(c.tokens.size());
  if (c.finish.stop_token >= 0 && n > 0) --n;  // the EOS that ended it
  return n;
}

json GenerationJob::usage() const {
  int64_t prompt = 0, completion = 0, reasoning = 0, cached = 0;
  for (const auto& c : choices_) {
    prompt += c.prompt_tokens;
    if (c.prompt_tokens > 0) cached += c.cached_tokens;   // the choice that counts the shared prompt
    completion += static_cast<int64_t>(c.tokens.size());
    reasoning += reasoning_tokens(c);
  }
  return usage_json(prompt, completion, cfg_.think_end_id >= 0 ? reasoning : -1, cached);
}

bool GenerationJob::emit_chat(JobChoice& c, int index, const engine::GenEvent& ev, std::string& out) {
  auto add = [&](json chunk) {
    if (cfg_.continuous_usage) chunk["usage"] = usage();
    out += sse_event(chunk);
  };
  json delta = json::object();
  if (!c.started) {
    c.started = true;
    add(chat_chunk(cfg_.id, cfg_.created, cfg_.model, index, {{"role", "assistant"}, {"content", ""}}));
    if (!c.prefix.empty()) delta = c.chat->push(c.prefix);
  }
  json d = c.chat->push(ev.text);
  for (auto it = d.begin(); it != d.end(); ++it) {
    if (it.key() == "tool_calls" && delta.contains("tool_calls")) {
      for (const auto& t : it.value()) delta["tool_calls"].push_back(t);
    } else if (it.value().is_string() && delta.contains(it.key()) && delta[it.key()].is_string()) {
      delta[it.key()] = delta[it.key()].get<std::string>() + it.value().get<std::string>();
    } else {
      delta[it.key()] = it.value();
    }
  }
  json lp = cfg_.logprobs && !ev.tokens.empty() ? chat_logprobs(cfg_.tokenizer, ev.tokens) : json(nullptr);
  if (!delta.empty() || !lp.is_null()) add(chat_chunk(cfg_.id, cfg_.created, cfg_.model, index, delta, nullptr, lp));
  if (ev.finished) {
    if (ev.reason == engine::FinishReason::kError) {
      out += sse_event(ApiError(500, "generation failed: " + ev.error).to_json());
    }
    json rest = c.chat->finish();
    if (!rest.empty()) add(chat_chunk(cfg_.id, cfg_.created, cfg_.model, index, rest));
    bool tools = c.chat->streamed_tool_calls() && !cfg_.named_tool_choice;
    json fin = chat_chunk(cfg_.id, cfg_.created, cfg_.model, index, json::object(),
                          api_finish_reason(ev.reason, tools));
    fin["choices"][0]["stop_reason"] = stop_reason_json(ev, cfg_.eos_ids);
    add(fin);
  }
  return true;
}

bool GenerationJob::emit_completion(JobChoice& c, int index, const engine::GenEvent& ev, std::string& out) {
  auto add = [&](json chunk) {
    if (cfg_.continuous_usage) chunk["usage"] = usage();
    out += sse_event(chunk);
  };
  std::string text = ev.text;
  bool first = !c.started;
  if (!c.started) {
    c.started = true;
    text = c.echo + text;
    c.text_offset = c.echo.size();
  }
  json lp = nullptr;
  if (first && cfg_.echo_logprobs) {
    lp = echo_completion_logprobs(cfg_.tokenizer, c.prompt_ids, c.prompt_lp, ev.tokens);
    c.text_offset = 0;
    for (const auto& s : lp["tokens"]) c.text_offset += s.get<std::string>().size();
  } else if (cfg_.logprobs && !ev.tokens.empty()) {
    lp = completion_logprobs(cfg_.tokenizer, ev.tokens, c.text_offset);
    for (const auto& t : ev.tokens) c.text_offset += token_string(cfg_.tokenizer, t.token).size();
  }
  if (!text.empty() || !lp.is_null() || (cfg_.return_token_ids && !ev.tokens.empty())) {
    json ch = completion_chunk(cfg_.id, cfg_.created, cfg_.model, index, text, nullptr, lp);
    if (cfg_.return_token_ids) {
      json ids = json::array();
      for (const auto& t : ev.tokens) ids.push_back(t.token);
      ch["choices"][0]["token_ids"] = ids;
    }
    add(ch);
  }
  if (ev.finished) {
    if (ev.reason == engine::FinishReason::kError) {
      out += sse_event(ApiError(500, "generation failed: " + ev.error).to_json());
    }
    json fin = completion_chunk(cfg_.id, cfg_.created, cfg_.model, index, "", api_finish_reason(ev.reason, false));
    fin["choices"][0]["stop_reason"] = stop_reason_json(ev, cfg_.eos_ids);
    add(fin);
  }
  return true;
}

bool GenerationJob::pump_stream(const std::function<bool(const std::string&)>& write, double wait_s) {
  if (done_written_) return false;
  std::string out;
  if (check_deadline()) {
    out += sse_event(ApiError(504, timeout_message(), "", "request_timeout").to_json());
    out += kSseDone;
    done_written_ = true;
    write(out);
    return false;
  }
  bool waited = false;
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (choices_[i].done) continue;
    engine::GenEvent ev;
    if (!take(i, waited ? 0.0 : wait_s, ev)) {
      waited = true;
      continue;
    }
    waited = true;
    if (cfg_.chat) emit_chat(choices_[i], static_cast<int>(i), ev, out);
    else emit_completion(choices_[i], static_cast<int>(i), ev, out);
  }
  bool all = std::all_of(choices_.begin(), choices_.end(), [](const JobChoice& c) { return c.done; });
  if (all) {
    if (cfg_.include_usage) {
      json u = {{"id", cfg_.id}, {"object", cfg_.chat ? "chat.completion.chunk" : "text_completion"},
                {"created", cfg_.created}, {"model", cfg_.model}, {"choices", json::array()}, {"usage", usage()}};
      out += sse_event(u);
    }
    out += kSseDone;
    done_written_ = true;
  }
  if (!out.empty() && !write(out)) {
    cancel();
    return false;
  }
  return !done_written_;
}

bool GenerationJob::pump_collect(double wait_s) {
  if (check_deadline()) return true;
  bool waited = false;
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (choices_[i].done) continue;
    engine::GenEvent ev;
    take(i, waited ? 0.0 : wait_s, ev);
    waited = true;
  }
  return std::all_of(choices_.begin(), choices_.end(), [](const JobChoice& c) { return c.done; });
}

json GenerationJob::final_response() const {
  json choices = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const JobChoice& c = choices_[i];
    json ch;
    ch["index"] = i;
    if (cfg_.chat) {
      json msg = c.chat->parse_all(c.prefix + c.text);
      json m = {{"role", "assistant"}};
      for (auto it = msg.begin(); it != msg.end(); ++it) m[it.key()] = it.value();
      if (!m.contains("content")) m["content"] = nullptr;
      bool tools = m.contains("tool_calls") && !m["tool_calls"].empty() && !cfg_.named_tool_choice;
      ch["message"] = m;
      ch["logprobs"] = cfg_.logprobs ? chat_logprobs(cfg_.tokenizer, c.tokens) : json(nullptr);
      ch["finish_reason"] = api_finish_reason(c.finish.reason, tools);
    } else {
      ch["text"] = c.echo + c.text;
      if (cfg_.echo_logprobs) {
        ch["logprobs"] = echo_completion_logprobs(cfg_.tokenizer, c.prompt_ids, c.prompt_lp, c.tokens);
      } else {
        ch["logprobs"] = cfg_.logprobs ? completion_logprobs(cfg_.tokenizer, c.tokens, c.echo.size()) : json(nullptr);
      }
      if (cfg_.prompt_logprobs && !c.prompt_ids.empty()) {
        ch["prompt_logprobs"] = prompt_logprobs_json(cfg_.tokenizer, c.prompt_ids, c.prompt_lp);
      }
      ch["finish_reason"] = api_finish_reason(c.finish.reason, false);
      if (cfg_.return_token_ids) {
        json ids = json::array();
        for (const auto& t : c.tokens) ids.push_back(t.token);
        ch["token_ids"] = ids;
      }
    }
    ch["stop_reason"] = stop_reason_json(c.finish, cfg_.eos_ids);
    choices.push_back(ch);
  }
  json out = {{"id", cfg_.id}, {"object", cfg_.chat ? "chat.completion" : "text_completion"},
              {"created", cfg_.created}, {"model", cfg_.model}, {"choices", choices}, {"usage", usage()}};
  if (cfg_.chat && cfg_.prompt_logprobs && !choices_.empty()) {
    out["prompt_logprobs"] = prompt_logprobs_json(cfg_.tokenizer, choices_[0].prompt_ids, choices_[0].prompt_lp);
  }
  return out;
}

}  // namespace qinfer::server
