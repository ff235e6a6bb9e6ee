#include "util/thread_pool.h"

#include <algorithm>
#include <memory>

namespace qinfer {

namespace {
// Set while a thread runs a parallel_for body: a nested parallel_for from inside
// it runs inline on that thread instead of waiting for workers that are all busy.
thread_local bool t_in_parallel_region = false;

struct RegionGuard {
  bool saved = t_in_parallel_region;
  RegionGuard() { t_in_parallel_region = true; }
  ~RegionGuard() { t_in_parallel_region = saved; }
};
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  for (int i = 1; i < num_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_start_.notify_all();
  for (auto& t : threads_) t.join();
}

namespace {
// Spin iterations before sleeping (each a CPU pause hint, ~10-50 ns).
constexpr int kSpin = 4000;
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpin && !stop_.load(std::memory_order_relaxed); ++spin) {
      cpu_relax();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, [&] { return stop_.load() || generation_.load(std::memory_order_acquire) != seen; });
      g = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = g;
    // The job fields were written before the generation was bumped, and the
    // caller does not touch them again until every worker has finished.
    if (index < job_chunks_) {
      int64_t b = index * job_chunk_, e = std::min(job_n_, b + job_chunk_);
      RegionGuard guard;
      if (b < e) (*job_)(b, e, index);
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);  // the caller may be about to sleep
      cv_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int chunks = static_cast<int>(std::min<int64_t>(num_threads_, (n + grain - 1) / grain));
  if (chunks <= 1 || t_in_parallel_region) {
    RegionGuard guard;
    fn(0, n, 0);
    return;
  }
  int64_t chunk = (n + chunks - 1) / chunks;
  job_ = &fn;
  job_n_ = n;
  job_chunk_ = chunk;
  job_chunks_ = chunks;
  pending_.store(num_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);  // a worker checking before it sleeps sees it
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_start_.notify_all();
  {
    RegionGuard guard;
    fn(0, std::min(n, chunk), 0);
  }
  for (int spin = 0; spin < kSpin && pending_.load(std::memory_order_acquire) != 0; ++spin) cpu_relax();
  if (pending_.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
  job_ = nullptr;
}

namespace {
std::unique_ptr<ThreadPool>& global_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
}  // namespace

ThreadPool& ThreadPool::global() {
  auto& p = global_slot();
  if (!p) p = std::make_unique<ThreadPool>(0);
  return *p;
}

void ThreadPool::set_global_threads(int num_threads) {
  global_slot() = std::make_unique<ThreadPool>(num_threads);
}

}  // namespace qinfer
