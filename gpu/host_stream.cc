#include "gpu/host_stream.h"

namespace auxstore::gpu {

HostStream::HostStream(std::chrono::microseconds delay) : delay_(delay) {
  thread_ = std::thread([this] { Run(); });
}

HostStream::~HostStream() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HostStream::Enqueue(std::function<Status()> op) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(op));
    ++enqueued_;
  }
  cv_.notify_one();
}

void HostStream::Wait() {
  std::unique_lock lock(mu_);
  const uint64_t target = enqueued_;
  ++waiters_;
  done_cv_.wait(lock, [&] { return completed_ >= target; });
  --waiters_;
}

Status HostStream::sticky_error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void HostStream::set_delay(std::chrono::microseconds delay) {
  std::lock_guard lock(mu_);
  delay_ = delay;
}

void HostStream::Run() {
  std::deque<std::function<Status()>> batch;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    // Everything queued so far runs in one pass: one lock round trip and one
    // wake-up per batch instead of per operation.
    batch.swap(queue_);
    const auto delay = delay_;
    lock.unlock();
    Status first_error;
    for (auto& op : batch) {
      if (delay.count() > 0) std::this_thread::sleep_for(delay);
      Status st = op();
      op = nullptr;  // release what it captured before the batch ends
      if (!st.ok() && first_error.ok()) first_error = std::move(st);
    }
    const uint64_t ran = batch.size();
    batch.clear();
    lock.lock();
    if (!first_error.ok() && error_.ok()) error_ = std::move(first_error);
    completed_ += ran;
    if (waiters_ > 0) done_cv_.notify_all();
  }
}

}  // namespace auxstore::gpu
