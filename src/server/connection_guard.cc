#include "server/connection_guard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>

#include "server/api_error.h"
#include "util/error.h"

namespace qinfer::server {

namespace {

constexpr double kOverflowHeaderSeconds = 2;  // an overflow connection's header deadline, at most
constexpr double kPollSliceSeconds = 0.05;    // keep-alive waits look at the server's stop this often

thread_local bool t_overflow = false;
thread_local bool t_close_after = false;   // close_connection_after_response() for the current request

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Waits until `sock` has `events` or `deadline` (now_s() clock) passes.
bool wait_until(socket_t sock, short events, double deadline) {
  for (;;) {
    double left = deadline - now_s();
    if (left <= 0) return false;
    pollfd p{sock, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::ceil(std::min(left, 3600.0) * 1000)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

std::string numeric_address(const sockaddr_storage& a, socklen_t len, int* port) {
  char host[NI_MAXHOST] = "", serv[NI_MAXSERV] = "";
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "";
  }
  if (port) *port = std::atoi(serv);
  std::string h = host;
  if (h.rfind("::ffff:", 0) == 0 && h.find('.') != std::string::npos) h = h.substr(7);  // IPv4-mapped
  return h;
}

std::string peer_address(socket_t sock, int* port = nullptr) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(sock, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  return numeric_address(a, len, port);
}

std::string error_response(int status, const char* reason, const std::string& message, const std::string& code,
                           bool retry_after) {
  std::string body = ApiError(status, message, "", code).to_json().dump();
  return cat("HTTP/1.1 ", status, " ", reason, "\r\nContent-Type: application/json\r\n",
             retry_after ? "Retry-After: 1\r\n" : "", "Connection: close\r\nContent-Length: ", body.size(), "\r\n\r\n",
             body);
}

// One connection as httplib's request parser sees it: a buffered, non-blocking socket (or TLS
// session on it) whose reads stop at the request's header deadline until its headers are in.
class ConnStream final : public httplib::Stream {
 public:
  ConnStream(socket_t sock, SSL* ssl, const ConnectionLimits& l) : sock_(sock), ssl_(ssl), limits_(l) {}

  // A new request starts (its first byte is readable): its headers are due by `deadline`.
  void begin_request(double deadline) {
    header_deadline_ = deadline;
    headers_done_ = false;
    timed_out_ = false;
    last_ = 0;
    before_last_ = 0;
  }
  bool header_timed_out() const { return timed_out_; }
  bool buffered() const { return pos_ < len_ || (ssl_ && SSL_pending(ssl_) > 0); }

  bool is_readable() const override {
    return buffered() || wait_until(sock_, POLLIN, now_s() + limits_.read_timeout_s);
  }
  bool is_writable() const override {
    return !timed_out_ && wait_until(sock_, POLLOUT, now_s() + limits_.write_timeout_s) && alive();
  }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      ssize_t r = fill();
      if (r <= 0) return r;
    }
    size_t k = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, k);
    pos_ += k;
    if (!headers_done_) {
      // The header block ends with an empty line ("\r\n\r\n", or "\n\n").
      for (size_t i = 0; i < k && !headers_done_; ++i) {
        char c = ptr[i];
        if (c == '\n' && (last_ == '\n' || (last_ == '\r' && before_last_ == '\n'))) headers_done_ = true;
        before_last_ = last_;
        last_ = c;
      }
    }
    return static_cast<ssize_t>(k);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (timed_out_) return -1;  // the request is answered with a 408 instead
    return write_all(ptr, size);
  }

  ssize_t write_all(const char* ptr, size_t size) {
    size_t off = 0;
    while (off < size) {
      const double deadline = now_s() + limits_.write_timeout_s;
      if (ssl_) {
        ERR_clear_error();
        int n = SSL_write(ssl_, ptr + off, static_cast<int>(std::min<size_t>(size - off, 1 << 30)));
        if (n > 0) {
          off += static_cast<size_t>(n);
          continue;
        }
        int e = SSL_get_error(ssl_, n);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (!ev || !wait_until(sock_, ev, deadline)) return -1;
      } else {
        ssize_t n = ::send(sock_, ptr + off, size - off, MSG_NOSIGNAL);
        if (n > 0) {
          off += static_cast<size_t>(n);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || !wait_until(sock_, POLLOUT, deadline)) return -1;
      }
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = peer_address(sock_, &port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip.clear();
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = numeric_address(a, len, &port);
  }
  socket_t socket() const override { return sock_; }

 private:
  // Reads more bytes into the buffer: > 0 bytes, 0 at the end of the stream, -1 on an error
  // or when the read or header deadline passes.
  ssize_t fill() {
    pos_ = len_ = 0;
    for (;;) {
      double deadline = now_s() + limits_.read_timeout_s;
      if (!headers_done_) deadline = std::min(deadline, header_deadline_);
      short ev = POLLIN;
      if (ssl_) {
        ERR_clear_error();
        int n = SSL_read(ssl_, buf_, sizeof buf_);
        if (n > 0) {
          len_ = static_cast<size_t>(n);
          return n;
        }
        int e = SSL_get_error(ssl_, n);
        if (e == SSL_ERROR_ZERO_RETURN) return 0;
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return -1;
        if (e == SSL_ERROR_WANT_WRITE) ev = POLLOUT;
      } else {
        ssize_t n = ::recv(sock_, buf_, sizeof buf_, 0);
        if (n > 0) {
          len_ = static_cast<size_t>(n);
          return n;
        }
        if (n == 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      }
      if (!wait_until(sock_, ev, deadline)) {
        if (!headers_done_) timed_out_ = true;
        return -1;
      }
    }
  }

  // False once the client has closed its side (as httplib's is_socket_alive: a readable socket
  // that reads as the end of the stream).
  bool alive() const {
    if (buffered()) return true;
    pollfd p{sock_, POLLIN, 0};
    int r = ::poll(&p, 1, 0);
    if (r <= 0) return r == 0;
    if (p.revents & (POLLERR | POLLNVAL)) return false;
    char c;
    ssize_t n = ::recv(sock_, &c, 1, MSG_PEEK);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }

  socket_t sock_;
  SSL* ssl_;
  const ConnectionLimits& limits_;
  char buf_[16384];
  size_t pos_ = 0, len_ = 0;
  double header_deadline_ = 0;
  bool headers_done_ = true, timed_out_ = false;
  char last_ = 0, before_last_ = 0;
};

using RequestFn = std::function<bool(httplib::Stream&, bool close_connection, bool& connection_closed)>;

// The keep-alive loop of one admitted connection (httplib's process_server_socket_core, with
// the header deadline and the overflow rules).
void serve_requests(ConnStream& strm, bool overflow, const ConnectionLimits& l, const std::atomic<socket_t>& svr_sock,
                    size_t keep_alive_max, double keep_alive_s, const RequestFn& request) {
  const double header_s = overflow ? std::min(l.header_timeout_s, kOverflowHeaderSeconds) : l.header_timeout_s;
  size_t left = overflow ? 1 : std::max<size_t>(1, keep_alive_max);
  double idle_s = header_s;  // the first request is due at once; later ones within the keep-alive time
  t_overflow = overflow;
  while (left > 0) {
    // Wait for the next request's first byte, looking at the server's stop now and then.
    const double idle_end = now_s() + idle_s;
    bool ready = strm.buffered();
    while (!ready && svr_sock != INVALID_SOCKET && now_s() < idle_end) {
      ready = wait_until(strm.socket(), POLLIN, std::min(idle_end, now_s() + kPollSliceSeconds));
    }
    if (!ready || svr_sock == INVALID_SOCKET) break;
    strm.begin_request(now_s() + header_s);
    bool closed = false;
    t_close_after = false;
    bool ok = request(strm, left == 1, closed);
    if (strm.header_timed_out()) {
      std::string r = error_response(408, "Request Timeout",
                                     cat("request line and headers not received within ", header_s,
                                         " s (--header-timeout); connection closed"),
                                     "request_timeout", false);
      strm.write_all(r.data(), r.size());
      break;
    }
    if (!ok || closed || t_close_after) break;
    --left;
    idle_s = keep_alive_s;
  }
  t_overflow = false;
  t_close_after = false;
}

// Admits `sock` through `gate`; returns how, writing a quick 503 to a refused plain connection.
struct Admission {
  ConnectionGate& gate;
  std::string ip;
  ConnectionGate::Admit how;
  Admission(ConnectionGate& g, socket_t sock) : gate(g), ip(peer_address(sock)), how(g.admit(ip)) {}
  ~Admission() { gate.release(ip, how); }
};

void set_nonblocking(socket_t sock) {
  int fl = ::fcntl(sock, F_GETFL, 0);
  if (fl >= 0) ::fcntl(sock, F_SETFL, fl | O_NONBLOCK);
}

void close_socket(socket_t sock) {
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

}  // namespace

bool overflow_connection() { return t_overflow; }

void close_connection_after_response() { t_close_after = true; }

ConnectionGate::Admit ConnectionGate::admit(const std::string& ip) {
  std::lock_guard<std::mutex> lk(mu_);
  int& mine = per_ip_[ip];
  bool over = (limits_.max_connections > 0 && normal_ >= static_cast<size_t>(limits_.max_connections)) ||
              (limits_.max_per_client > 0 && mine >= limits_.max_per_client);
  if (!over) {
    ++mine;
    ++normal_;
    return Admit::kNormal;
  }
  if (mine == 0) per_ip_.erase(ip);
  if (overflow_ < static_cast<size_t>(std::max(0, limits_.overflow))) {
    ++overflow_;
    ++overflowed_;
    return Admit::kOverflow;
  }
  ++refused_;
  return Admit::kRefused;
}

void ConnectionGate::release(const std::string& ip, Admit a) {
  std::lock_guard<std::mutex> lk(mu_);
  if (a == Admit::kOverflow) {
    --overflow_;
  } else if (a == Admit::kNormal) {
    --normal_;
    auto it = per_ip_.find(ip);
    if (it != per_ip_.end() && --it->second <= 0) per_ip_.erase(it);
  }
}

size_t ConnectionGate::open() const {
  std::lock_guard<std::mutex> lk(mu_);
  return normal_ + overflow_;
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  set_nonblocking(sock);
  {
    Admission adm(gate_, sock);
    ConnStream strm(sock, nullptr, limits_);
    if (adm.how == ConnectionGate::Admit::kRefused) {
      std::string r = error_response(503, "Service Unavailable",
                                     "too many connections (--max-connections, --max-connections-per-client); "
                                     "retry later",
                                     "too_many_connections", true);
      strm.write_all(r.data(), r.size());
    } else {
      serve_requests(strm, adm.how == ConnectionGate::Admit::kOverflow, limits_, svr_sock_, keep_alive_max_count_,
                     static_cast<double>(keep_alive_timeout_sec_),
                     [this](httplib::Stream& s, bool close, bool& closed) {
                       return process_request(s, close, closed, nullptr);
                     });
    }
  }
  close_socket(sock);
  return true;
}

bool GuardedSslServer::process_and_close_socket(socket_t sock) {
  set_nonblocking(sock);
  {
    Admission adm(gate_, sock);
    SSL* ssl = adm.how == ConnectionGate::Admit::kRefused ? nullptr : SSL_new(ssl_context());
    if (ssl && SSL_set_fd(ssl, sock) == 1) {
      // The handshake is due within the header deadline too.
      const double deadline = now_s() + limits_.header_timeout_s;
      bool ok = false;
      for (;;) {
        ERR_clear_error();
        int r = SSL_accept(ssl);
        if (r == 1) {
          ok = true;
          break;
        }
        int e = SSL_get_error(ssl, r);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (!ev || !wait_until(sock, ev, deadline)) break;
      }
      if (ok) {
        ConnStream strm(sock, ssl, limits_);
        serve_requests(strm, adm.how == ConnectionGate::Admit::kOverflow, limits_, svr_sock_, keep_alive_max_count_,
                       static_cast<double>(keep_alive_timeout_sec_),
                       [this](httplib::Stream& s, bool close, bool& closed) {
                         return process_request(s, close, closed, nullptr);
                       });
        SSL_shutdown(ssl);
      }
    }
    if (ssl) SSL_free(ssl);
  }
  close_socket(sock);
  return true;
}

}  // namespace qinfer::server
