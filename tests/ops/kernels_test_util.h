// Shared helpers for the ops kernel tests: random data, the kernel paths this
// CPU can run, and tolerance checks against a double-precision reference.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu_features.h"
#include "ops/matmul.h"

namespace qinfer::ops::testing {

inline std::vector<std::string> available_paths() {
  std::vector<std::string> p{"scalar"};
  if (cpu_features().has_avx2_path()) p.push_back("avx2");
  if (cpu_features().has_avx512_path()) p.push_back("avx512");
  return p;
}

// ASan+UBSan at -O1 (scripts/sanitize.sh) runs the probe about 5x slower than -O2 (avx512 on the
// 2-core host: 0.09 s -> 0.5 s alone, 1.2 s beside another test): the probes'
// runaway bound below is for optimized builds and times this under ASan.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kSanitizerSlowdown = 4.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr double kSanitizerSlowdown = 4.0;
#else
constexpr double kSanitizerSlowdown = 1.0;
#endif
#else
constexpr double kSanitizerSlowdown = 1.0;
#endif

// A start-up probe's speed is a benchmark figure (qinfer bench's "probes" line): the
// tests only catch a runaway probe (the serializing clflush once made one take 9.7 s).
// A bound of one second here failed beside a loaded test run (ctest -j2 and the fuzzers
// on two cores: the AMX host's 0.5 s BF16 probes took 2.2 s).
constexpr double kProbeRunawaySeconds = 8.0 * kSanitizerSlowdown;

// Restores automatic path selection when a test ends.
struct PathGuard {
  explicit PathGuard(const std::string& name) { set_kernel_path(name.c_str()); }
  ~PathGuard() { set_kernel_path(""); }
};

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}


// For |f| < 65504: nearest fp16 (ties away from zero; exactness is all tests need).
inline uint16_t f32_to_f16(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(std::lround(a / std::ldexp(1.0, -24)));
  int e;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  long mant = std::lround((m * 2 - 1) * 1024);
  if (mant == 1024) { mant = 0; ++e; }
  return sign | static_cast<uint16_t>(((e - 1 + 15) << 10) | mant);
}

// y ~ ref within rel * scale (scale = sum |w*x| of that output) + abs.
inline void expect_close(const std::vector<float>& y, const std::vector<double>& ref, const std::vector<double>& mag,
                         double rel, const std::string& what) {
  ASSERT_EQ(y.size(), ref.size());
  int bad = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double tol = rel * mag[i] + 1e-6;
    if (!(std::fabs(y[i] - ref[i]) <= tol)) {
      if (++bad <= 5) ADD_FAILURE() << what << ": element " << i << " got " << y[i] << " want " << ref[i];
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace qinfer::ops::testing
