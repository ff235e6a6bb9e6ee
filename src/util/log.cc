#include "util/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

namespace qinfer {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

void log_line(LogLevel level, const std::string& msg) {
  static const char* kTags[] = {"debug", "info", "warn", "error", ""};
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "[qinfer %s] %s\n", kTags[static_cast<int>(level)], msg.c_str());
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

Progress::Progress(std::string what, int64_t total)
    : what_(std::move(what)), total_(total > 0 ? total : 1), start_(now_seconds()),
      tty_(isatty(2) != 0) {}

void Progress::update(int64_t done) {
  if (log_level() > LogLevel::kInfo) return;
  int pct = static_cast<int>(100 * done / total_);
  if (pct == last_pct_ || (!tty_ && pct < last_pct_ + 10 && done != total_)) return;
  last_pct_ = pct;
  std::lock_guard<std::mutex> lock(g_mu);
  const double elapsed = now_seconds() - start_;
  char eta[48] = "";
  if (done > 0 && done < total_)
    std::snprintf(eta, sizeof eta, ", eta %.0fs", elapsed * static_cast<double>(total_ - done) / static_cast<double>(done));
  std::fprintf(stderr, "%s[qinfer] %s %lld/%lld (%d%%, %.1fs%s)%s", tty_ ? "\r" : "", what_.c_str(),
               static_cast<long long>(done), static_cast<long long>(total_), pct, elapsed, eta,
               tty_ ? "" : "\n");
  std::fflush(stderr);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  update(total_);
  if (tty_ && log_level() <= LogLevel::kInfo) std::fprintf(stderr, "\n");
}

}  // namespace qinfer
