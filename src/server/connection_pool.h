// The HTTP server's worker threads: one per open connection, made on demand up to a hard
// cap, so a request never waits behind idle or half-sent connections (a slowloris client
// holding 100 connections used to starve /health in a fixed pool of 72). Beyond the cap,
// connections wait in order for a thread. Idle threads exit after a while.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace qinfer::server {

class ConnectionPool : public httplib::TaskQueue {
 public:
  // max_threads: most connections served at once; min_threads stay up when idle.
  ConnectionPool(size_t max_threads, size_t min_threads, double idle_exit_seconds = 30);
  ~ConnectionPool() override;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

  size_t threads() const;  // live worker threads
  size_t busy() const;     // threads running a connection
  size_t waiting() const;  // connections waiting for a thread (the cap is reached)

 private:
  void worker();

  const size_t max_threads_, min_threads_;
  const double idle_exit_seconds_;
  mutable std::mutex mu_;
  std::condition_variable cv_, exited_;
  std::deque<std::function<void()>> jobs_;
  size_t threads_ = 0, busy_ = 0;
  bool shutdown_ = false;
};

}  // namespace qinfer::server
