#include "model/profile.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace qinfer::model {

namespace {
constexpr int kParts = static_cast<int>(Part::kCount);
const char* const kNames[kParts] = {"embed",     "norms+residual", "gdn proj",   "gdn conv+gates",  "gdn delta rule",
                                    "gdn out",   "attn proj",      "attn core",  "attn out",        "moe router",
                                    "moe gate/up", "moe down",  "moe combine",  "final head"};
std::array<std::atomic<int64_t>, kParts> g_ns{};
std::array<std::atomic<int64_t>, kParts> g_calls{};
}  // namespace

bool profiling() {
  static const bool on = [] {
    const char* v = std::getenv("QINFER_PROFILE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void profile_add(Part p, double seconds) {
  const int i = static_cast<int>(p);
  g_ns[i] += static_cast<int64_t>(seconds * 1e9);
  g_calls[i] += 1;
}

void profile_reset() {
  for (int i = 0; i < kParts; ++i) g_ns[i] = g_calls[i] = 0;
}

std::string profile_report() {
  double total = 0;
  for (int i = 0; i < kParts; ++i) total += g_ns[i] * 1e-9;
  std::string out;
  char line[160];
  for (int i = 0; i < kParts; ++i) {
    if (g_calls[i] == 0) continue;
    const double s = g_ns[i] * 1e-9;
    std::snprintf(line, sizeof line, "  %-16s %9.2f ms %5.1f%%  %7lld calls\n", kNames[i], s * 1e3,
                  total > 0 ? 100.0 * s / total : 0.0, static_cast<long long>(g_calls[i].load()));
    out += line;
  }
  return out;
}

}  // namespace qinfer::model
