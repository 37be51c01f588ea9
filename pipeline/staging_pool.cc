#include "pipeline/staging_pool.h"

#include <boost/asio/post.hpp>

namespace auxstore::pipeline {

namespace asio = boost::asio;

StagingPool::StagingPool(GpuBackend& gpu, asio::thread_pool& pool, size_t bytes)
    : gpu_(gpu), pool_(pool), bytes_(bytes) {}

Result<std::unique_ptr<StagingPool>> StagingPool::Create(GpuBackend& gpu, asio::thread_pool& pool,
                                                         size_t count, size_t bytes) {
  if (count == 0 || bytes == 0) {
    return Status::InvalidArgument("staging pool needs at least one buffer of non-zero size");
  }
  std::unique_ptr<StagingPool> sp(new StagingPool(gpu, pool, bytes));
  for (size_t i = 0; i < count; ++i) {
    AUXSTORE_ASSIGN_OR_RETURN(uint8_t * p, gpu.AllocPinned(bytes));
    sp->all_.push_back(p);
    sp->free_.push_back(p);
  }
  return sp;
}

StagingPool::~StagingPool() {
  WaitAllReturned();
  for (uint8_t* p : all_) (void)gpu_.FreePinned(p);
}

void StagingPool::WaitAllReturned() {
  std::unique_lock lock(mu_);
  returned_cv_.wait(lock, [&] { return outstanding_.load() == 0; });
}

void StagingPool::AsyncAcquire(Handler handler) {
  uint8_t* p = nullptr;
  {
    std::lock_guard lock(mu_);
    ++outstanding_;  // counted from the request, so teardown waits for it
    if (free_.empty()) {
      ++waits_;
      waiters_.push_back(std::move(handler));
      return;
    }
    p = free_.back();
    free_.pop_back();
  }
  asio::post(pool_, [this, handler = std::move(handler), b = Buffer{p, bytes_}] {
    handler(Lease(this, b));
  });
}

StagingPool::Lease StagingPool::TryAcquire() {
  std::lock_guard lock(mu_);
  if (free_.empty() || !waiters_.empty()) return Lease();
  ++outstanding_;
  uint8_t* p = free_.back();
  free_.pop_back();
  return Lease(this, Buffer{p, bytes_});
}

StagingPool::Lease& StagingPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    Return();
    pool_ = std::exchange(o.pool_, nullptr);
    buf_ = std::exchange(o.buf_, {});
    held_ = std::exchange(o.held_, false);
  }
  return *this;
}

void StagingPool::Lease::Return() {
  if (!pool_) return;
  if (held_) pool_->EndHold();
  pool_->Release(buf_);
  pool_ = nullptr;
  held_ = false;
}

Status StagingPool::Lease::ReturnAfter(StreamHandle stream) {
  if (!pool_) return Status::Ok();
  if (held_) pool_->EndHold();
  StagingPool* pool = std::exchange(pool_, nullptr);
  held_ = false;
  return pool->ReleaseAfter(buf_, stream);
}

bool StagingPool::Lease::TryHold() {
  if (!pool_ || held_) return held_;
  held_ = pool_->TryHold();
  return held_;
}

void StagingPool::Release(Buffer buf) {
  Handler next;
  {
    std::lock_guard lock(mu_);
    --outstanding_;  // a buffer handed to a waiter stays counted by its request
    if (waiters_.empty()) {
      free_.push_back(buf.data);
      // Notified under the lock: a waiter in the destructor cannot free the
      // condition variable before this returns.
      returned_cv_.notify_all();
      return;
    }
    next = std::move(waiters_.front());
    waiters_.pop_front();
  }
  asio::post(pool_, [this, next = std::move(next), b = Buffer{buf.data, bytes_}] {
    next(Lease(this, b));
  });
}

bool StagingPool::TryHold() {
  std::lock_guard lock(mu_);
  if (held_ >= all_.size() / 2) return false;
  ++held_;
  return true;
}

void StagingPool::EndHold() {
  std::lock_guard lock(mu_);
  --held_;
}

Status StagingPool::ReleaseAfter(Buffer buf, StreamHandle stream) {
  // The callback runs on the backend's thread: it takes the mutex briefly and
  // at most posts the next waiter, never calls into the backend.
  Status st = gpu_.LaunchHostFunc(stream, [this, buf] { Release(buf); });
  if (st.ok()) return st;
  Status sync = gpu_.Synchronize(stream);  // the copy must be done before reuse
  Release(buf);
  return sync.ok() ? st : sync;
}

}  // namespace auxstore::pipeline
