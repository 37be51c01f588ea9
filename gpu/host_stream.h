// One host-backend stream: an in-order executor on its own thread, so work
// really runs after the enqueuing call returns (as on a GPU).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "auxstore/status.h"

namespace auxstore::gpu {

class HostStream {
 public:
  // Each operation is delayed by `delay` before it runs (tests use it to make
  // copies complete late).
  explicit HostStream(std::chrono::microseconds delay = {});
  ~HostStream();  // runs what is queued, then joins
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  // An operation returns its Status; the first failure becomes the stream's
  // sticky error and later operations still run (their inputs were checked).
  void Enqueue(std::function<Status()> op);
  // Waits until everything enqueued before the call has run.
  void Wait();
  Status sticky_error() const;
  void set_delay(std::chrono::microseconds delay);

 private:
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;       // work queued or stopping
  std::condition_variable done_cv_;  // an operation finished
  std::deque<std::function<Status()>> queue_;
  uint64_t enqueued_ = 0, completed_ = 0;
  int waiters_ = 0;  // threads in Wait()
  bool stop_ = false;
  std::chrono::microseconds delay_;
  Status error_;
  std::thread thread_;
};

}  // namespace auxstore::gpu
