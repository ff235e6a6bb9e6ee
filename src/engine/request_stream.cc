#include "engine/request_stream.h"

#include <chrono>

#include "util/log.h"

namespace qinfer::engine {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
    default: return "";
  }
}

bool RequestStream::take(GenEvent& out, double timeout_s) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!dirty_) {
    cv_.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return dirty_; });
    if (!dirty_) return false;
  }
  out = pending_;
  pending_.tokens.clear();
  pending_.text.clear();
  pending_.token_times.clear();
  pending_.prompt_logprobs.clear();
  dirty_ = false;
  return true;
}

void RequestStream::cancel() {
  if (cancelled_.exchange(true)) return;
  if (on_cancel_) on_cancel_();
}

bool RequestStream::finished() const {
  std::lock_guard<std::mutex> lk(mu_);
  return done_;
}

void RequestStream::push_token(const TokenOut& t, const std::string& text, int64_t completion_tokens) {
  std::lock_guard<std::mutex> lk(mu_);
  pending_.tokens.push_back(t);
  pending_.token_times.push_back(now_seconds());
  pending_.text += text;
  pending_.completion_tokens = completion_tokens;
  dirty_ = true;
  cv_.notify_all();
}

void RequestStream::push_text(const std::string& text) {
  if (text.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  pending_.text += text;
  dirty_ = true;
  cv_.notify_all();
}

void RequestStream::set_prompt_logprobs(std::vector<TokenOut> lp) {
  std::lock_guard<std::mutex> lk(mu_);
  pending_.prompt_logprobs = std::move(lp);
}

void RequestStream::set_first_token_time(double seconds) {
  std::lock_guard<std::mutex> lk(mu_);
  pending_.time_to_first_token = seconds;
}

void RequestStream::set_cached_tokens(int64_t n) {
  std::lock_guard<std::mutex> lk(mu_);
  pending_.cached_tokens = n;
}

void RequestStream::finish(FinishReason reason, const std::string& stop_str, int stop_token,
                           const std::string& error) {
  std::lock_guard<std::mutex> lk(mu_);
  if (done_) return;
  done_ = true;
  pending_.finished = true;
  pending_.reason = reason;
  pending_.stop_str = stop_str;
  pending_.stop_token = stop_token;
  pending_.error = error;
  dirty_ = true;
  cv_.notify_all();
}

}  // namespace qinfer::engine
