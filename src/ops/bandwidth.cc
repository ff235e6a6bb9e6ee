#include "ops/bandwidth.h"

#include <emmintrin.h>
#include <xmmintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <memory>
#include <vector>

#include "ops/prefetch_hint.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::ops {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Floats per parallel chunk unit: 4 KiB, so threads work on page-aligned runs.
constexpr int64_t kUnit = 1024;
// Both passes prefetch this many bytes ahead, as the decode kernels do: the
// probe must read at least as fast as they can, or the floor would come out too
// low (bench_ops, three alternating runs: read 67-70 GB/s without, 73-81 with
// 4 KiB ahead, 62-74 with 8 KiB; the lm_head matvec streamed 67-71 then).
constexpr int64_t kAhead = 4096;

}  // namespace

BandwidthProbe::BandwidthProbe(int64_t bytes_per_array) {
  if (bytes_per_array < (int64_t{1} << 20)) fail("bandwidth probe: bytes_per_array must be at least 1 MiB");
  const int64_t units = bytes_per_array / 4 / kUnit;
  n_ = units * kUnit;
  // In transparent huge pages, like the model's resident weights (4 KiB pages
  // read measurably slower, which would flatter the decode figures).
  constexpr size_t kHuge = size_t{2} << 20;
  bytes_ = (static_cast<size_t>(3 * n_) * 4 + kHuge - 1) / kHuge * kHuge;
  data_ = static_cast<float*>(std::aligned_alloc(kHuge, bytes_));
  if (!data_) fail("bandwidth probe: out of memory for ", bytes_, " bytes");
  madvise(data_, bytes_, MADV_HUGEPAGE);
  float *pa = data_, *pb = pa + n_, *pc = pb + n_;
  // First touch from the threads that will use each part.
  ThreadPool::global().parallel_for(units, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b * kUnit; i < e * kUnit; ++i) { pa[i] = 0; pb[i] = 1; pc[i] = 2; }
  });
}

BandwidthProbe::~BandwidthProbe() { std::free(data_); }

Bandwidth BandwidthProbe::measure(int repeats, int64_t bytes_per_array) const {
  if (repeats < 1) fail("bandwidth probe: repeats must be at least 1");
  if (bytes_per_array != 0 && bytes_per_array < (int64_t{1} << 20))
    fail("bandwidth probe: bytes_per_array must be at least 1 MiB");
  const int64_t units = bytes_per_array == 0 ? n_ / kUnit : std::min(n_, bytes_per_array / 4) / kUnit;
  const int64_t n = units * kUnit;
  // The three arrays a, b, c sit n_ apart; a pass over fewer bytes uses the
  // start of each, and the read test reads those three runs.
  float *pa = data_, *pb = pa + n_, *pc = pb + n_;
  ThreadPool& pool = ThreadPool::global();
  Bandwidth r;
  r.threads = pool.size();
  r.bytes_per_array = n * 4;
  double best_triad = 1e30, best_read = 1e30;
  std::vector<double> sums(pool.size(), 0.0);
  // Each pass runs with both prefetch hints (into L1, and non-temporal, which
  // the dense decode rows use) and the faster one counts.
  auto triad = [&]<int Hint>() {
    const double t0 = now_s();
    pool.parallel_for(units, 1, [&](int64_t b, int64_t e, int) {
      const __m128 s = _mm_set1_ps(3.0f);
      for (int64_t i = b * kUnit; i < e * kUnit; i += 4) {
        if (i % 16 == 0) {
          _mm_prefetch(reinterpret_cast<const char*>(pb + i) + kAhead, QINFER_MM_HINT(Hint));
          _mm_prefetch(reinterpret_cast<const char*>(pc + i) + kAhead, QINFER_MM_HINT(Hint));
        }
        _mm_storeu_ps(pa + i, _mm_add_ps(_mm_loadu_ps(pb + i), _mm_mul_ps(s, _mm_loadu_ps(pc + i))));
      }
    });
    return now_s() - t0;
  };
  auto read = [&]<int Hint>() {
    const double t0 = now_s();
    pool.parallel_for(3 * units, 1, [&](int64_t b, int64_t e, int t) {
      __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t u = b; u < e; ++u) {
        const float* p = data_ + (u / units) * n_ + (u % units) * kUnit;   // unit u of the three runs
        for (int64_t i = 0; i < kUnit; i += 16) {  // one 64-byte line per step
          _mm_prefetch(reinterpret_cast<const char*>(p + i) + kAhead, QINFER_MM_HINT(Hint));
          s0 = _mm_add_ps(s0, _mm_load_ps(p + i));
          s1 = _mm_add_ps(s1, _mm_load_ps(p + i + 4));
          s2 = _mm_add_ps(s2, _mm_load_ps(p + i + 8));
          s3 = _mm_add_ps(s3, _mm_load_ps(p + i + 12));
        }
      }
      alignas(16) float v[4];
      _mm_store_ps(v, _mm_add_ps(_mm_add_ps(s0, s1), _mm_add_ps(s2, s3)));
      sums[t] += v[0] + v[1] + v[2] + v[3];
    });
    return now_s() - t0;
  };
  for (int rep = 0; rep < repeats; ++rep) {
    best_triad = std::min({best_triad, triad.operator()<_MM_HINT_T0>(), triad.operator()<_MM_HINT_NTA>()});
    best_read = std::min({best_read, read.operator()<_MM_HINT_T0>(), read.operator()<_MM_HINT_NTA>()});
  }
  r.triad_gbs = 3.0 * n * 4 / best_triad / 1e9;
  r.read_gbs = 3.0 * n * 4 / best_read / 1e9;
  return r;
}

Bandwidth measure_bandwidth(int64_t bytes_per_array, int repeats) {
  return BandwidthProbe(bytes_per_array).measure(repeats);
}

}  // namespace qinfer::ops
