// StagingPool: a bounded set of pinned host buffers handed out to handlers
// on an Asio pool.
//
// A buffer goes back to the pool only when the device work reading (or
// writing) it has completed — ReleaseAfter enqueues a host callback on the
// stream that returns it — never when the enqueuing call returns. When every
// buffer is out, AsyncAcquire queues the handler (FIFO) instead of blocking:
// the pool is the restore path's memory bound. The free list is guarded by a
// mutex held only to push or pop: a return or an acquire costs one post to
// the Asio pool at most (no strand hop).
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "auxstore/gpu_backend.h"

namespace auxstore::pipeline {

class StagingPool {
 public:
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    std::span<uint8_t> span() const { return {data, size}; }
  };

  // One buffer out of the pool, returned exactly once: by ReturnAfter (once
  // the device passed the work reading it), or, for a buffer no device work
  // uses, when the lease is dropped. Move-only.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept { *this = std::move(o); }
    Lease& operator=(Lease&& o) noexcept;
    ~Lease() { Return(); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    explicit operator bool() const { return pool_ != nullptr; }
    uint8_t* data() const { return buf_.data; }
    size_t size() const { return buf_.size; }
    std::span<uint8_t> span() const { return buf_.span(); }

    // Returns the buffer once all work enqueued on `stream` so far has
    // completed (synchronizing the stream if the callback cannot be
    // enqueued). The lease is empty afterwards.
    Status ReturnAfter(StreamHandle stream);
    // Returns the buffer now (no device work may use it).
    void Return();
    // Counts this buffer in the hold budget (StagingPool::TryHold) for as
    // long as the lease keeps it; false when the budget is spent.
    bool TryHold();

   private:
    friend class StagingPool;
    Lease(StagingPool* pool, Buffer buf) : pool_(pool), buf_(buf) {}
    StagingPool* pool_ = nullptr;
    Buffer buf_;
    bool held_ = false;
  };
  using Handler = std::function<void(Lease)>;

  static Result<std::unique_ptr<StagingPool>> Create(GpuBackend& gpu,
                                                     boost::asio::thread_pool& pool, size_t count,
                                                     size_t bytes);
  // Waits until every buffer is back (the Asio pool must still run), then
  // frees them.
  ~StagingPool();

  // Runs `handler` on the Asio pool once a buffer is free.
  void AsyncAcquire(Handler handler);
  // A free buffer now, or an empty lease when none is free or handlers are
  // queued for one (they go first).
  Lease TryAcquire();

  // Holding a buffer while waiting for others (a restore keeping chunk 0 of
  // a layer until the upload phase) is allowed for at most capacity()/2
  // buffers pool-wide, so at least one always circulates and restores cannot
  // deadlock each other (Lease::TryHold).
  size_t capacity() const { return all_.size(); }
  size_t buffer_bytes() const { return bytes_; }
  // Buffers out plus queued acquires.
  size_t outstanding() const { return outstanding_.load(); }
  uint64_t waits() const { return waits_.load(); }  // acquires that had to queue
  void WaitAllReturned();

 private:
  StagingPool(GpuBackend& gpu, boost::asio::thread_pool& pool, size_t bytes);
  void Release(Buffer buf);
  Status ReleaseAfter(Buffer buf, StreamHandle stream);
  bool TryHold();
  void EndHold();

  GpuBackend& gpu_;
  boost::asio::thread_pool& pool_;
  const size_t bytes_;
  std::vector<uint8_t*> all_;
  std::mutex mu_;
  std::condition_variable returned_cv_;
  std::vector<uint8_t*> free_;          // guarded by mu_
  std::deque<Handler> waiters_;         // guarded by mu_
  std::atomic<size_t> outstanding_{0};  // written under mu_
  std::atomic<uint64_t> waits_{0};
  size_t held_ = 0;  // guarded by mu_
};

}  // namespace auxstore::pipeline
