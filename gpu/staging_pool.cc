#include "gpu/staging_pool.h"

#include <boost/asio/post.hpp>

namespace auxstore::gpu {

namespace asio = boost::asio;

StagingPool::StagingPool(GpuBackend& gpu, asio::thread_pool& pool, size_t bytes)
    : gpu_(gpu), pool_(pool), strand_(asio::make_strand(pool.get_executor())), bytes_(bytes) {}

Result<std::unique_ptr<StagingPool>> StagingPool::Create(GpuBackend& gpu, asio::thread_pool& pool,
                                                         size_t count, size_t bytes) {
  if (count == 0 || bytes == 0) {
    return Status::InvalidArgument("staging pool needs at least one buffer of non-zero size");
  }
  std::unique_ptr<StagingPool> sp(new StagingPool(gpu, pool, bytes));
  for (size_t i = 0; i < count; ++i) {
    AUXSTORE_ASSIGN_OR_RETURN(uint8_t * p, gpu.AllocPinned(bytes));
    sp->all_.push_back(p);
    sp->free_.push_back(Buffer{p, bytes});
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
  ++outstanding_;  // counted from the request, so teardown waits for it
  asio::post(strand_, [this, handler = std::move(handler)]() mutable {
    if (free_.empty()) {
      ++waits_;
      waiters_.push_back(std::move(handler));
      return;
    }
    Buffer buf = free_.back();
    free_.pop_back();
    asio::post(pool_, [handler = std::move(handler), buf] { handler(buf); });
  });
}

void StagingPool::ReturnOnStrand(Buffer buf) {
  if (!waiters_.empty()) {  // hand it straight to the oldest waiter
    Handler h = std::move(waiters_.front());
    waiters_.pop_front();
    {
      std::lock_guard lock(mu_);
      --outstanding_;  // that request's own count stays
    }
    asio::post(pool_, [h = std::move(h), buf] { h(buf); });
    return;
  }
  free_.push_back(buf);
  {
    std::lock_guard lock(mu_);
    --outstanding_;
  }
  returned_cv_.notify_all();
}

void StagingPool::Release(Buffer buf) {
  asio::post(strand_, [this, buf] { ReturnOnStrand(buf); });
}

Status StagingPool::ReleaseAfter(Buffer buf, StreamHandle stream) {
  // The callback runs on the backend's thread and only posts.
  Status st = gpu_.LaunchHostFunc(
      stream, [this, buf] { asio::post(strand_, [this, buf] { ReturnOnStrand(buf); }); });
  if (st.ok()) return st;
  Status sync = gpu_.Synchronize(stream);  // the copy must be done before reuse
  Release(buf);
  return sync.ok() ? st : sync;
}

}  // namespace auxstore::gpu
