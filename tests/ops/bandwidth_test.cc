// The bandwidth probe: argument checks, sizes and sane figures (its speed is
// measured by `qinfer bench`, never asserted here).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/bandwidth.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

TEST(BandwidthProbe, RejectsTinyBuffersAndNoRepeats) {
  EXPECT_THROW(BandwidthProbe(1000), Error);
  const BandwidthProbe p(int64_t{2} << 20);
  EXPECT_THROW(p.measure(0), Error);
  EXPECT_THROW(p.measure(1, 4096), Error);
  EXPECT_THROW(measure_bandwidth(1000, 1), Error);
}

TEST(BandwidthProbe, HoldsItsBufferAndMeasuresAPrefix) {
  const int64_t per_array = (int64_t{4} << 20) + 12345;
  const BandwidthProbe p(per_array);
  EXPECT_GE(p.resident_bytes(), 3u * (size_t{4} << 20));
  EXPECT_EQ(p.resident_bytes() % (size_t{2} << 20), 0u);   // whole huge pages
  const Bandwidth all = p.measure(1);
  const int64_t whole = per_array / 4096 * 4096;            // whole 4 KiB units
  EXPECT_EQ(all.bytes_per_array, whole);
  const Bandwidth part = p.measure(2, int64_t{1} << 20);
  EXPECT_EQ(part.bytes_per_array, int64_t{1} << 20);
  const Bandwidth more = p.measure(1, int64_t{64} << 20);   // capped at the buffer
  EXPECT_EQ(more.bytes_per_array, whole);
  for (const Bandwidth& b : {all, part, more}) {
    EXPECT_TRUE(std::isfinite(b.triad_gbs) && b.triad_gbs > 0);
    EXPECT_TRUE(std::isfinite(b.read_gbs) && b.read_gbs > 0);
    EXPECT_GE(b.threads, 1);
  }
}

}  // namespace
}  // namespace qinfer::ops
