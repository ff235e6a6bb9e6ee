// Per-request bookkeeping for the operator: the X-Request-Id (the client's, when it sent a
// usable one, else made here; echoed on the response), the token counts the request used,
// and the one access-log line written when its response is finished:
//   access: 127.0.0.1 POST /v1/chat/completions 200 id=chatreq-1f.. prompt_tokens=12 generation_tokens=30 time=0.412s
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace qinfer::server {

struct RequestRecord {
  std::string id;
  double start = 0;                         // now_seconds() at arrival
  std::atomic<int64_t> prompt_tokens{0};
  std::atomic<int64_t> generation_tokens{0};
};

// The client's X-Request-Id if it is 1..128 printable ASCII characters without spaces
// or quotes; otherwise a new random id.
std::string request_id_from_header(const std::string& header);

// The access-log line (without a trailing newline).
std::string access_log_line(const std::string& remote, const std::string& method, const std::string& path,
                            int status, const RequestRecord& r, double seconds);

// Records of the requests in flight, keyed by the server's request object.
class RequestRegistry {
 public:
  std::shared_ptr<RequestRecord> begin(const void* key, std::string id, double now);
  std::shared_ptr<RequestRecord> find(const void* key) const;
  std::shared_ptr<RequestRecord> end(const void* key);  // removes it; null when unknown

 private:
  mutable std::mutex mu_;
  std::map<const void*, std::shared_ptr<RequestRecord>> live_;
};

}  // namespace qinfer::server
