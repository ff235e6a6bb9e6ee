// One HTTP generation request in flight: its engine streams (n choices, several
// prompts for /v1/completions) and the shaping of their events into OpenAI SSE
// chunks or, at the end, one response body.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/chat_output.h"
#include "server/request_log.h"

namespace qinfer::server {

class Metrics;

struct JobChoice {
  std::shared_ptr<engine::RequestStream> stream;
  std::unique_ptr<ChatOutput> chat;      // chat jobs only
  std::string prefix;                    // text forced into the prompt that belongs to the output
  std::string echo;                      // completions with echo: the prompt text
  std::string text;
  std::vector<engine::TokenOut> tokens;
  engine::GenEvent finish;
  bool started = false, done = false;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;   // of the prompt, restored from the prefix cache (usage.prompt_tokens_details)
  size_t text_offset = 0;                // completions logprobs text_offset
  std::vector<int> prompt_ids;           // for prompt_logprobs / echo logprobs
  std::vector<engine::TokenOut> prompt_lp;
  bool has_prompt_lp = false;
  double first_token_time = -1, last_token_time = -1;  // now_seconds()
};

struct JobConfig {
  bool chat = true;
  std::string id, model;
  int64_t created = 0;
  bool stream = false, include_usage = false, continuous_usage = false;
  bool logprobs = false;
  bool return_token_ids = false;
  bool named_tool_choice = false;        // finish_reason stays "stop" with a named tool
  const Tokenizer* tokenizer = nullptr;
  std::vector<int> eos_ids;
  int think_end_id = -1;                 // count usage reasoning_tokens up to this id (-1: none)
  bool reasoning_closed = false;         // the prompt's forced prefix closed thinking: 0 reasoning tokens
  bool prompt_logprobs = false;          // report prompt_logprobs (computed by the engine)
  bool echo_logprobs = false;            // completions echo + logprobs: prompt tokens lead the logprobs
  std::shared_ptr<RequestRecord> record; // token counts for the access log (may be null)
  double deadline = 0;                   // now_seconds() after which the job is ended (0: none)
  double timeout_s = 0;                  // for the message
  int n = 1;                             // for the request metrics
  int64_t max_tokens = -1;
};

class GenerationJob {
 public:
  GenerationJob(JobConfig cfg, std::vector<JobChoice> choices, Metrics* metrics);
  ~GenerationJob();  // cancels what is still running

  // Waits up to wait_s for events and writes the SSE text they produce (streaming).
  // Returns false when the job is complete ([DONE] written).
  bool pump_stream(const std::function<bool(const std::string&)>& write, double wait_s);
  // Waits up to wait_s for events (non-streaming). Returns true when every choice is done.
  bool pump_collect(double wait_s);
  nlohmann::json final_response() const;
  void cancel();
  bool failed() const;            // a choice ended with an engine error
  std::string error_message() const;
  // Past the deadline and not finished: cancels everything (once) and returns true.
  bool check_deadline();
  bool timed_out() const { return timed_out_; }
  std::string timeout_message() const;

 private:
  bool take(size_t i, double wait_s, engine::GenEvent& ev);
  nlohmann::json usage() const;
  int64_t reasoning_tokens(const JobChoice& c) const;
  bool emit_chat(JobChoice& c, int index, const engine::GenEvent& ev, std::string& out);
  bool emit_completion(JobChoice& c, int index, const engine::GenEvent& ev, std::string& out);

  JobConfig cfg_;
  std::vector<JobChoice> choices_;
  Metrics* metrics_;
  double start_;
  bool done_written_ = false;
  bool ttft_seen_ = false;
  bool timed_out_ = false;
  bool request_observed_ = false;
};

}  // namespace qinfer::server
