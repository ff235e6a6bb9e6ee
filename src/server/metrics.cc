#include "server/metrics.h"

#include <cstdio>

#include "util/log.h"

namespace qinfer::server {

namespace {
std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Prefix caching under vLLM V1's names and help texts (counters of tokens; the client
// library adds the _total suffix), with the cache's size next to them.
void render_prefix_cache(const engine::EngineStats& s, const std::string& lbl, std::string& o) {
  auto metric = [&](const char* family, const char* sample, const char* type, const char* help, int64_t v) {
    o += std::string("# HELP ") + family + " " + help + "\n# TYPE " + family + " " + type + "\n";
    o += std::string(sample) + "{" + lbl + "} " + std::to_string(v) + "\n";
  };
  metric("vllm:prefix_cache_queries", "vllm:prefix_cache_queries_total", "counter",
         "Prefix cache queries, in terms of number of queried tokens.", s.prefix_cache_queries);
  metric("vllm:prefix_cache_hits", "vllm:prefix_cache_hits_total", "counter",
         "Prefix cache hits, in terms of number of cached tokens.", s.prefix_cache_hits);
  metric("qinfer_prefix_cache_bytes", "qinfer_prefix_cache_bytes", "gauge",
         "Memory held by the prefix cache (KV blocks and DeltaNet state snapshots).", s.prefix_cache_bytes);
  metric("qinfer_prefix_cache_blocks", "qinfer_prefix_cache_blocks", "gauge", "KV blocks in the prefix cache.",
         s.prefix_cache_blocks);
  metric("qinfer_prefix_cache_states", "qinfer_prefix_cache_states", "gauge",
         "DeltaNet state snapshots in the prefix cache.", s.prefix_cache_states);
}
}  // namespace

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(const std::string& name, std::string& out) const {
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + num(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      latency_({0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}),
      start_(now_seconds()) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lk(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::observe_ttft(double s) {
  std::lock_guard<std::mutex> lk(mu_);
  ttft_.observe(s);
}

void Metrics::observe_latency(double s) {
  std::lock_guard<std::mutex> lk(mu_);
  latency_.observe(s);
}

void Metrics::count_finish(const std::string& reason) {
  std::lock_guard<std::mutex> lk(mu_);
  ++finished_[reason];
}

std::string Metrics::render(const engine::EngineStats& s, const std::string& model) const {
  std::lock_guard<std::mutex> lk(mu_);
  std::string o;
  std::string lbl = "model_name=\"" + model + "\"";
  o += "# HELP qinfer_http_requests_total HTTP requests by endpoint and status code.\n";
  o += "# TYPE qinfer_http_requests_total counter\n";
  for (const auto& [k, v] : requests_) {
    o += "qinfer_http_requests_total{endpoint=\"" + k.first + "\",code=\"" + std::to_string(k.second) + "\"} " +
         std::to_string(v) + "\n";
  }
  o += "# HELP qinfer_request_success_total Finished generation requests by finish reason.\n";
  o += "# TYPE qinfer_request_success_total counter\n";
  for (const auto& [k, v] : finished_) {
    o += "qinfer_request_success_total{" + lbl + ",finished_reason=\"" + k + "\"} " + std::to_string(v) + "\n";
  }
  auto gauge = [&](const char* name, const char* help, const std::string& v, const char* type = "gauge") {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    o += std::string(name) + "{" + lbl + "} " + v + "\n";
  };
  gauge("qinfer_num_requests_running", "Sequences in the running batch.", std::to_string(s.active));
  gauge("qinfer_num_requests_waiting", "Requests waiting in the queue.", std::to_string(s.queued));
  gauge("qinfer_prompt_tokens_total", "Prefilled prompt tokens.", std::to_string(s.prompt_tokens), "counter");
  gauge("qinfer_generation_tokens_total", "Generated tokens.", std::to_string(s.generation_tokens), "counter");
  gauge("qinfer_engine_steps_total", "Batched forward steps.", std::to_string(s.steps), "counter");
  gauge("qinfer_requests_aborted_total", "Requests cancelled (client gone).", std::to_string(s.requests_aborted),
        "counter");
  gauge("qinfer_engine_busy_seconds_total", "Seconds spent in forward + sampling.", num(s.busy_seconds), "counter");
  gauge("qinfer_generation_tokens_per_second", "Generated tokens per busy second since start.",
        num(s.busy_seconds > 0 ? static_cast<double>(s.generation_tokens) / s.busy_seconds : 0.0));
  gauge("qinfer_uptime_seconds", "Seconds since the server started.", num(now_seconds() - start_));
  o += "# HELP qinfer_time_to_first_token_seconds Time from request arrival to its first token.\n";
  o += "# TYPE qinfer_time_to_first_token_seconds histogram\n";
  ttft_.render("qinfer_time_to_first_token_seconds", o);
  o += "# HELP qinfer_e2e_request_latency_seconds Time from request arrival to its last token.\n";
  o += "# TYPE qinfer_e2e_request_latency_seconds histogram\n";
  latency_.render("qinfer_e2e_request_latency_seconds", o);
  render_prefix_cache(s, lbl, o);
  return o;
}

}  // namespace qinfer::server
