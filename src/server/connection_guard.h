// Connection admission and request deadlines for the HTTP(S) server (issue 12 item 5, slowloris).
//
// httplib's own connection loop only bounds each read (--read-timeout), so a client that sends a
// header byte every few seconds holds a worker forever, and nothing bounds connections per client.
// GuardedServer / GuardedSslServer replace that loop (httplib's virtual process_and_close_socket)
// and keep httplib's request parsing, routing and response writing (Server::process_request):
//   - the request line and headers of every request must arrive within header_timeout_s of its
//     first byte (the body then has read_timeout_s per read); past it the connection gets a
//     408 with an OpenAI error body and is closed;
//   - connections open at once are bounded per client IP address and in all; a connection over
//     either bound is an "overflow" one: served for one request, with a header deadline of at most
//     2 s, and only /health, /ping, /metrics and /version are answered on it (the route handlers
//     see it through overflow_connection(); the server answers 503 to the rest), so /health stays
//     answerable while the normal slots are taken. At most `overflow` such connections are open at
//     once; past that a connection gets an immediate 503 (TLS: is closed) without a thread waiting.
#pragma once
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include <httplib.h>

namespace qinfer::server {

struct ConnectionLimits {
  double header_timeout_s = 5;  // request line + headers, from the request's first byte
  double read_timeout_s = 10;   // each read of a body
  double write_timeout_s = 60;  // each write
  int max_connections = 1024;   // open at once, in all (0: no bound)
  int max_per_client = 256;     // open at once from one IP address (0: no bound)
  int overflow = 64;            // over-the-bound connections answered (health/metrics only)
};

// Counts of open connections per client and in all.
class ConnectionGate {
 public:
  enum class Admit { kNormal, kOverflow, kRefused };
  explicit ConnectionGate(const ConnectionLimits& l) : limits_(l) {}
  Admit admit(const std::string& ip);
  void release(const std::string& ip, Admit a);
  size_t open() const;        // normal + overflow connections open now
  size_t refused() const { return refused_; }       // connections refused at once, since start
  size_t overflowed() const { return overflowed_; } // connections admitted over a bound, since start

 private:
  const ConnectionLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, int> per_ip_;  // normal connections per IP
  size_t normal_ = 0, overflow_ = 0;
  std::atomic<size_t> refused_{0}, overflowed_{0};
};

// True inside the handlers of a request that arrived on an overflow connection.
bool overflow_connection();
// Called while a response is made (a handler, httplib's error handler): the connection is
// closed once this response is written, whatever keep-alive says. The server calls it for
// httplib's own refusals (unparsable request line or headers, 413, 414), after which the
// rest of the stream cannot be trusted to start a request; the response should carry
// "Connection: close".
void close_connection_after_response();

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(const ConnectionLimits& l) : limits_(l), gate_(l) {}
  const ConnectionGate& gate() const { return gate_; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  const ConnectionLimits limits_;
  ConnectionGate gate_;
};

class GuardedSslServer : public httplib::SSLServer {
 public:
  GuardedSslServer(const ConnectionLimits& l, const char* cert, const char* key)
      : httplib::SSLServer(cert, key), limits_(l), gate_(l) {}
  const ConnectionGate& gate() const { return gate_; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  const ConnectionLimits limits_;
  ConnectionGate gate_;
};

}  // namespace qinfer::server
