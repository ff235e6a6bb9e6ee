#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "util/thread_pool.h"

namespace qinfer {
namespace {

TEST(ThreadPool, CoversEveryIndexOnce) {
  ThreadPool pool(4);
  for (int64_t n : {1, 3, 7, 64, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, NestedCallsRunInlineInsteadOfHanging) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  pool.parallel_for(6, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(10, 1, [&](int64_t bb, int64_t ee, int t) {
        EXPECT_EQ(t, 0);
        total += ee - bb;
      });
  });
  EXPECT_EQ(total.load(), 60);
}

}  // namespace
}  // namespace qinfer
