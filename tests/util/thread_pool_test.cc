#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
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

// Back-to-back jobs (the workers still spinning from the last one) and jobs after
// a pause long enough for them to have gone to sleep: each job sees its own
// arguments and every index exactly once.
TEST(ThreadPool, RapidAndSpacedJobsAreEachRunCompletely) {
  for (int threads : {2, 3, 5}) {
    ThreadPool pool(threads);
    for (int job = 0; job < 3000; ++job) {
      const int64_t n = 1 + job % 13;
      std::atomic<int64_t> sum{0};
      pool.parallel_for(n, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) sum += i + job;
      });
      ASSERT_EQ(sum.load(), n * (n - 1) / 2 + n * job) << "threads " << threads << " job " << job;
      if (job % 1000 == 999) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

TEST(ThreadPool, DestroysCleanlyWhileWorkersSpinOrSleep) {
  for (int wait_ms : {0, 30}) {
    ThreadPool pool(4);
    std::atomic<int> ran{0};
    pool.parallel_for(4, 1, [&](int64_t, int64_t, int) { ran++; });
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    EXPECT_EQ(ran.load(), 4);
  }  // the destructor must join every worker (a hang fails the test by timeout)
}

}  // namespace
}  // namespace qinfer
