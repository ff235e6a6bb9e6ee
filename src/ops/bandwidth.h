// Memory bandwidth of this machine, measured with all pool threads over buffers
// far larger than cache. Decode speed is bounded by weight bytes / read_gbs.
#pragma once
#include <cstddef>
#include <cstdint>

namespace qinfer::ops {

struct Bandwidth {
  double triad_gbs = 0;  // a[i] = b[i] + s*c[i], 3 arrays counted (STREAM convention)
  double read_gbs = 0;   // sum over one buffer (the access pattern of matvec)
  int threads = 0;
  int64_t bytes_per_array = 0;
};

// A probe holding its buffer (3 arrays, transparent huge pages, first-touched by
// the pool threads) for its lifetime, so that repeated measurements neither
// fault pages in again nor move the process's peak resident memory: a caller
// can subtract resident_bytes() from it.
class BandwidthProbe {
 public:
  // bytes_per_array: size of each of the 3 triad arrays (the read test uses all
  // three as one buffer). Throws qinfer::Error below 1 MiB or out of memory.
  explicit BandwidthProbe(int64_t bytes_per_array = int64_t{128} << 20);
  ~BandwidthProbe();
  BandwidthProbe(const BandwidthProbe&) = delete;
  BandwidthProbe& operator=(const BandwidthProbe&) = delete;
  // Best of `repeats` passes over the first `bytes_per_array` bytes of each
  // array (0: all of them; at least 1 MiB). Throws on repeats < 1.
  Bandwidth measure(int repeats = 3, int64_t bytes_per_array = 0) const;
  size_t resident_bytes() const { return bytes_; }

 private:
  float* data_ = nullptr;
  size_t bytes_ = 0;
  int64_t n_ = 0;   // floats per array, a multiple of the parallel unit
};

// A probe of its own, measured once: BandwidthProbe(bytes_per_array).measure(repeats).
Bandwidth measure_bandwidth(int64_t bytes_per_array = int64_t{128} << 20, int repeats = 3);

}  // namespace qinfer::ops
