// Memory bandwidth of this machine, measured with all pool threads over buffers
// far larger than cache. Decode speed is bounded by weight bytes / read_gbs.
#pragma once
#include <cstdint>

namespace qinfer::ops {

struct Bandwidth {
  double triad_gbs = 0;  // a[i] = b[i] + s*c[i], 3 arrays counted (STREAM convention)
  double read_gbs = 0;   // sum over one buffer (the access pattern of matvec)
  int threads = 0;
  int64_t bytes_per_array = 0;
};

// bytes_per_array: size of each of the 3 triad arrays (the read test uses all
// three as one buffer). Best of `repeats` passes. Throws qinfer::Error on a
// size below 1 MiB or repeats < 1.
Bandwidth measure_bandwidth(int64_t bytes_per_array = int64_t{128} << 20, int repeats = 3);

}  // namespace qinfer::ops
