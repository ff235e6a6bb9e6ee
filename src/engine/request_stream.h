// The channel between the engine's scheduler thread and one request's consumer
// (an HTTP handler or the CLI). The scheduler pushes tokens/text/finish; the
// consumer takes everything pending at once; cancel() frees the sequence at the
// next scheduler step.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "engine/gen_params.h"

namespace qinfer::engine {

class RequestStream {
 public:
  explicit RequestStream(int64_t prompt_tokens) { pending_.prompt_tokens = prompt_tokens; }

  // Consumer side. Waits up to timeout_s for something new; returns false on timeout.
  // `out` gets everything pushed since the last take (tokens and text concatenated).
  bool take(GenEvent& out, double timeout_s);
  void cancel();
  bool cancelled() const { return cancelled_.load(); }
  bool finished() const;

  // Scheduler side.
  void push_token(const TokenOut& t, const std::string& text, int64_t completion_tokens);
  void push_text(const std::string& text);
  void set_prompt_logprobs(std::vector<TokenOut> lp);
  void set_first_token_time(double seconds);
  void set_cached_tokens(int64_t n);   // prompt tokens restored from the prefix cache
  void finish(FinishReason reason, const std::string& stop_str = {}, int stop_token = -1,
              const std::string& error = {});
  void set_on_cancel(std::function<void()> f) { on_cancel_ = std::move(f); }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  GenEvent pending_;
  bool dirty_ = false;
  bool done_ = false;
  std::atomic<bool> cancelled_{false};
  std::function<void()> on_cancel_;
};

}  // namespace qinfer::engine
