// Logging and progress to stderr. stdout is reserved for command results.
#pragma once
#include <cstdint>
#include <string>

#include "util/error.h"

namespace qinfer {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kQuiet = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_line(LogLevel level, const std::string& msg);

template <typename... Args>
void log_info(const Args&... a) { if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, cat(a...)); }
template <typename... Args>
void log_warn(const Args&... a) { if (log_level() <= LogLevel::kWarn) log_line(LogLevel::kWarn, cat(a...)); }
template <typename... Args>
void log_debug(const Args&... a) { if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, cat(a...)); }
template <typename... Args>
void log_error(const Args&... a) { log_line(LogLevel::kError, cat(a...)); }

// A progress line on stderr ("loading 12/40 layers ..."), rewritten in place on
// a terminal and printed at most every few percent otherwise.
class Progress {
 public:
  Progress(std::string what, int64_t total);
  void update(int64_t done);
  void finish();
 private:
  std::string what_;
  int64_t total_;
  int last_pct_ = -1;
  double start_;
  bool tty_;
  bool finished_ = false;
};

double now_seconds();  // monotonic clock

}  // namespace qinfer
