// GET /metrics in Prometheus text format, with vLLM's metric names, label sets and
// histogram buckets (vllm/v1/metrics/loggers.py) so dashboards built for vLLM work:
// every vllm:* series carries {model_name="<served name>",engine="0"}; counters are
// rendered as prometheus_client does (name_total, float values); bucket bounds as Python
// floats (le="1.0"). HTTP requests are counted as prometheus-fastapi-instrumentator does
// (http_requests_total{handler,method,status="2xx"}). qinfer_* series add what vLLM has no
// name for (engine steps, busy time, uptime, aborted and queue-full requests).
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "engine/engine.h"

namespace qinfer::server {

class Histogram {
 public:
  Histogram() = default;
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Appends "<name>_bucket{<labels>,le=..}", "_sum", "_count" lines.
  void render(const std::string& name, const std::string& labels, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

// vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to max_value.
std::vector<double> buckets_1_2_5(int64_t max_value);
// A bound or value as Python's repr(float(v)) writes it ("1.0", "0.025", "2560.0").
std::string prom_float(double v);

class Metrics {
 public:
  explicit Metrics(std::string model_name = "", int64_t max_model_len = 1);
  // The served name and max_model_len (token histograms' buckets), once the model is loaded.
  void configure(const std::string& model_name, int64_t max_model_len);
  void count_request(const std::string& handler, const std::string& method, int status);
  void count_rejected();                                  // queue full (503)
  void observe_ttft(double seconds);
  void observe_inter_token(double seconds);
  void observe_latency(double seconds);                   // e2e, arrival to last token
  void observe_decode_time(double seconds);               // first to last token
  // One finished request (all its choices): its token counts and parameters.
  void observe_request(int64_t prompt_tokens, int64_t generation_tokens, int n, int64_t max_tokens);
  void count_finish(const std::string& reason);
  std::string render(const engine::EngineStats& s, int max_num_seqs, int64_t max_model_len) const;

 private:
  mutable std::mutex mu_;
  std::string model_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> http_;
  std::map<std::string, uint64_t> finished_;
  uint64_t rejected_ = 0;
  Histogram ttft_, itl_, e2e_, decode_;
  Histogram prompt_tokens_, generation_tokens_, max_tokens_, n_;
  double start_;
};

}  // namespace qinfer::server
