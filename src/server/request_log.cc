#include "server/request_log.h"

#include <cstdio>

#include "server/openai_response.h"

namespace qinfer::server {

std::string request_id_from_header(const std::string& h) {
  bool ok = !h.empty() && h.size() <= 128;
  for (char c : h) {
    if (c <= ' ' || c > '~' || c == '"' || c == '\\') ok = false;
  }
  return ok ? h : make_request_id("req-");
}

std::string access_log_line(const std::string& remote, const std::string& method, const std::string& path,
                            int status, const RequestRecord& r, double seconds) {
  char t[32];
  std::snprintf(t, sizeof t, "%.3f", seconds);
  return "access: " + (remote.empty() ? std::string("-") : remote) + " " + method + " " + path + " " +
         std::to_string(status) + " id=" + r.id + " prompt_tokens=" + std::to_string(r.prompt_tokens.load()) +
         " generation_tokens=" + std::to_string(r.generation_tokens.load()) + " time=" + t + "s";
}

std::shared_ptr<RequestRecord> RequestRegistry::begin(const void* key, std::string id, double now) {
  auto r = std::make_shared<RequestRecord>();
  r->id = std::move(id);
  r->start = now;
  std::lock_guard<std::mutex> lk(mu_);
  live_[key] = r;
  return r;
}

std::shared_ptr<RequestRecord> RequestRegistry::find(const void* key) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = live_.find(key);
  return it == live_.end() ? nullptr : it->second;
}

std::shared_ptr<RequestRecord> RequestRegistry::end(const void* key) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = live_.find(key);
  if (it == live_.end()) return nullptr;
  auto r = it->second;
  live_.erase(it);
  return r;
}

}  // namespace qinfer::server
