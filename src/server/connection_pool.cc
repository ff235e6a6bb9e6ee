#include "server/connection_pool.h"

#include <chrono>

namespace qinfer::server {

ConnectionPool::ConnectionPool(size_t max_threads, size_t min_threads, double idle_exit_seconds)
    : max_threads_(std::max<size_t>(1, max_threads)),
      min_threads_(std::min(min_threads, std::max<size_t>(1, max_threads))),
      idle_exit_seconds_(idle_exit_seconds) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lk(mu_);
  if (shutdown_) return;
  jobs_.push_back(std::move(fn));
  // A new thread unless an idle one is there to take the job.
  if (threads_ - busy_ < jobs_.size() && threads_ < max_threads_) {
    ++threads_;
    std::thread([this] { worker(); }).detach();
  }
  cv_.notify_one();
}

void ConnectionPool::worker() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    bool timed_out = !cv_.wait_for(lk, std::chrono::duration<double>(idle_exit_seconds_),
                                   [&] { return shutdown_ || !jobs_.empty(); });
    if (jobs_.empty() && (shutdown_ || (timed_out && threads_ > min_threads_))) break;
    if (jobs_.empty()) continue;
    std::function<void()> fn = std::move(jobs_.front());
    jobs_.pop_front();
    ++busy_;
    lk.unlock();
    fn();
    fn = nullptr;
    lk.lock();
    --busy_;
  }
  --threads_;
  exited_.notify_all();
}

void ConnectionPool::shutdown() {
  std::unique_lock<std::mutex> lk(mu_);
  shutdown_ = true;
  cv_.notify_all();
  exited_.wait(lk, [&] { return threads_ == 0; });  // jobs queued before shutdown still run
}

size_t ConnectionPool::threads() const {
  std::lock_guard<std::mutex> lk(mu_);
  return threads_;
}

size_t ConnectionPool::busy() const {
  std::lock_guard<std::mutex> lk(mu_);
  return busy_;
}

size_t ConnectionPool::waiting() const {
  std::lock_guard<std::mutex> lk(mu_);
  return jobs_.size();
}

}  // namespace qinfer::server
