// Server metrics in Prometheus text format (GET /metrics): request counts by
// endpoint and status, token counters, queue/running gauges, time-to-first-token
// and end-to-end latency histograms, decode tokens/s.
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace qinfer::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Appends "<name>_bucket{le=..}", "_sum", "_count" lines.
  void render(const std::string& name, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void count_request(const std::string& endpoint, int status);
  void observe_ttft(double seconds);
  void observe_latency(double seconds);
  void count_finish(const std::string& reason);
  std::string render(const engine::EngineStats& s, const std::string& model) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> finished_;
  Histogram ttft_, latency_;
  double start_;
};

}  // namespace qinfer::server
