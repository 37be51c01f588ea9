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
  done_cv_.wait(lock, [&] { return completed_ >= target; });
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
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    auto op = std::move(queue_.front());
    queue_.pop_front();
    const auto delay = delay_;
    lock.unlock();
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    Status st = op();
    lock.lock();
    if (!st.ok() && error_.ok()) error_ = std::move(st);
    ++completed_;
    done_cv_.notify_all();
  }
}

}  // namespace auxstore::gpu
