#include "server/metrics.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "util/log.h"

namespace qinfer::server {

namespace {

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatencyBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,  15.0,  20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
// vLLM's FinishReason values, all listed from the start as prometheus_client does.
const char* const kFinishReasons[] = {"stop", "length", "abort", "error"};

std::string status_group(int status) { return std::to_string(status / 100) + "xx"; }

}  // namespace

std::string prom_float(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e16) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  for (int prec = 1; prec <= 17; ++prec) {  // shortest text that reads back exactly, as repr
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::vector<double> buckets_1_2_5(int64_t max_value) {
  std::vector<double> out;
  for (int64_t base = 1; base <= max_value; base *= 10) {
    for (int m : {1, 2, 5}) {
      if (base * m <= max_value) out.push_back(static_cast<double>(base * m));
    }
  }
  return out;
}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  if (counts_.empty()) counts_.assign(1, 0);
  ++counts_[std::min(i, counts_.size() - 1)];
  sum_ += v;
  ++count_;
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
  uint64_t cum = 0;
  std::string pre = labels.empty() ? "" : labels + ",";
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{" + pre + "le=\"" + prom_float(bounds_[i]) + "\"} " + prom_float(static_cast<double>(cum)) + "\n";
  }
  out += name + "_bucket{" + pre + "le=\"+Inf\"} " + prom_float(static_cast<double>(count_)) + "\n";
  out += name + "_count{" + labels + "} " + prom_float(static_cast<double>(count_)) + "\n";
  out += name + "_sum{" + labels + "} " + prom_float(sum_) + "\n";
}

Metrics::Metrics(std::string model_name, int64_t max_model_len)
    : model_(std::move(model_name)), ttft_(kTtftBuckets), itl_(kItlBuckets), e2e_(kLatencyBuckets),
      decode_(kLatencyBuckets), prompt_tokens_(buckets_1_2_5(max_model_len)),
      generation_tokens_(buckets_1_2_5(max_model_len)), max_tokens_(buckets_1_2_5(max_model_len)),
      n_({1, 2, 5, 10, 20}), start_(now_seconds()) {}

void Metrics::configure(const std::string& model_name, int64_t max_model_len) {
  std::lock_guard<std::mutex> lk(mu_);
  model_ = model_name;
  prompt_tokens_ = Histogram(buckets_1_2_5(max_model_len));
  generation_tokens_ = Histogram(buckets_1_2_5(max_model_len));
  max_tokens_ = Histogram(buckets_1_2_5(max_model_len));
}

void Metrics::count_request(const std::string& handler, const std::string& method, int status) {
  std::lock_guard<std::mutex> lk(mu_);
  ++http_[{handler, method, status_group(status)}];
}

void Metrics::count_rejected() {
  std::lock_guard<std::mutex> lk(mu_);
  ++rejected_;
}

void Metrics::observe_ttft(double s) {
  std::lock_guard<std::mutex> lk(mu_);
  ttft_.observe(s);
}

void Metrics::observe_inter_token(double s) {
  std::lock_guard<std::mutex> lk(mu_);
  itl_.observe(s);
}

void Metrics::observe_latency(double s) {
  std::lock_guard<std::mutex> lk(mu_);
  e2e_.observe(s);
}

void Metrics::observe_decode_time(double s) {
  std::lock_guard<std::mutex> lk(mu_);
  decode_.observe(s);
}

void Metrics::observe_request(int64_t prompt_tokens, int64_t generation_tokens, int n, int64_t max_tokens) {
  std::lock_guard<std::mutex> lk(mu_);
  prompt_tokens_.observe(static_cast<double>(prompt_tokens));
  generation_tokens_.observe(static_cast<double>(generation_tokens));
  n_.observe(n);
  if (max_tokens > 0) max_tokens_.observe(static_cast<double>(max_tokens));
}

void Metrics::count_finish(const std::string& reason) {
  std::lock_guard<std::mutex> lk(mu_);
  ++finished_[reason];
}

std::string Metrics::render(const engine::EngineStats& s, int max_num_seqs, int64_t max_model_len) const {
  std::lock_guard<std::mutex> lk(mu_);
  std::string o;
  std::string lbl = "model_name=\"" + model_ + "\",engine=\"0\"";
  auto head = [&](const std::string& name, const char* help, const char* type) {
    o += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto gauge = [&](const std::string& name, const char* help, double v) {
    head(name, help, "gauge");
    o += name + "{" + lbl + "} " + prom_float(v) + "\n";
  };
  auto counter = [&](const std::string& name, const char* help, double v) {
    head(name + "_total", help, "counter");
    o += name + "_total{" + lbl + "} " + prom_float(v) + "\n";
  };
  auto hist = [&](const std::string& name, const char* help, const Histogram& h) {
    head(name, help, "histogram");
    h.render(name, lbl, o);
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", static_cast<double>(s.active));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", static_cast<double>(s.queued));
  // The KV cache grows per sequence here (no fixed block pool): usage is the tokens held by
  // the running sequences over what max_num_seqs full-length sequences would hold.
  double capacity = static_cast<double>(max_num_seqs) * static_cast<double>(std::max<int64_t>(1, max_model_len));
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        std::min(1.0, static_cast<double>(s.kv_tokens) / capacity));
  counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
          static_cast<double>(s.prefix_cache_queries));
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          static_cast<double>(s.prefix_cache_hits));
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", 0);
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", static_cast<double>(s.prompt_tokens));
  counter("vllm:generation_tokens", "Number of generation tokens processed.", static_cast<double>(s.generation_tokens));
  head("vllm:request_success_total", "Count of successfully processed requests.", "counter");
  for (const char* r : kFinishReasons) {
    auto it = finished_.find(r);
    o += "vllm:request_success_total{" + lbl + ",finished_reason=\"" + r + "\"} " +
         prom_float(it == finished_.end() ? 0.0 : static_cast<double>(it->second)) + "\n";
  }
  hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", prompt_tokens_);
  hist("vllm:request_generation_tokens", "Number of generation tokens processed.", generation_tokens_);
  hist("vllm:request_params_n", "Histogram of the n request parameter.", n_);
  hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", max_tokens_);
  hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft_);
  hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itl_);
  hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2e_);
  hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", decode_);
  // Speculative decoding (vLLM registers these only with a speculative config; likewise here).
  if (!s.spec.accepted_per_pos.empty()) {
    counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", static_cast<double>(s.spec.num_drafts));
    counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", static_cast<double>(s.spec.num_draft_tokens));
    counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
            static_cast<double>(s.spec.num_accepted_tokens));
    head("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", "counter");
    for (size_t p = 0; p < s.spec.accepted_per_pos.size(); ++p)
      o += "vllm:spec_decode_num_accepted_tokens_per_pos_total{" + lbl + ",position=\"" + std::to_string(p) + "\"} " +
           prom_float(static_cast<double>(s.spec.accepted_per_pos[p])) + "\n";
  }
  head("http_requests_total", "Total number of requests by method, status and handler.", "counter");
  for (const auto& [k, v] : http_) {
    o += "http_requests_total{handler=\"" + std::get<0>(k) + "\",method=\"" + std::get<1>(k) + "\",status=\"" +
         std::get<2>(k) + "\"} " + prom_float(static_cast<double>(v)) + "\n";
  }
  auto q = [&](const char* name, const char* help, const char* type, double v) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    o += std::string(name) + "{model_name=\"" + model_ + "\"} " + prom_float(v) + "\n";
  };
  q("qinfer_engine_steps_total", "Batched forward steps.", "counter", static_cast<double>(s.steps));
  q("qinfer_requests_aborted_total", "Sequences cancelled (client gone, timeout, shutdown).", "counter",
    static_cast<double>(s.requests_aborted));
  q("qinfer_requests_rejected_total", "Requests refused with 503 because the waiting queue was full.", "counter",
    static_cast<double>(rejected_));
  q("qinfer_engine_busy_seconds_total", "Seconds spent in forward + sampling.", "counter", s.busy_seconds);
  q("qinfer_generation_tokens_per_second", "Generated tokens per busy second since start.", "gauge",
    s.busy_seconds > 0 ? static_cast<double>(s.generation_tokens) / s.busy_seconds : 0.0);
  q("qinfer_uptime_seconds", "Seconds since the server started.", "gauge", now_seconds() - start_);
  q("qinfer_prefix_cache_bytes", "Memory held by the prefix cache (KV blocks and DeltaNet state snapshots).", "gauge",
    static_cast<double>(s.prefix_cache_bytes));
  q("qinfer_prefix_cache_blocks", "KV blocks in the prefix cache.", "gauge", static_cast<double>(s.prefix_cache_blocks));
  q("qinfer_prefix_cache_states", "DeltaNet state snapshots in the prefix cache.", "gauge",
    static_cast<double>(s.prefix_cache_states));
  return o;
}

}  // namespace qinfer::server
