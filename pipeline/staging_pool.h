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

namespace auxstore::gpu {

class StagingPool {
 public:
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    std::span<uint8_t> span() const { return {data, size}; }
  };
  using Handler = std::function<void(Buffer)>;

  static Result<std::unique_ptr<StagingPool>> Create(GpuBackend& gpu,
                                                     boost::asio::thread_pool& pool, size_t count,
                                                     size_t bytes);
  // Waits until every buffer is back (the Asio pool must still run), then
  // frees them.
  ~StagingPool();

  // Runs `handler` on the Asio pool once a buffer is free.
  void AsyncAcquire(Handler handler);
  // A free buffer now, or nullopt when none is free or handlers are queued
  // for one (they go first).
  std::optional<Buffer> TryAcquire();
  // Returns `buf` once all work enqueued on `stream` so far has completed.
  // If the callback cannot be enqueued, synchronizes the stream first.
  Status ReleaseAfter(Buffer buf, StreamHandle stream);
  // Returns a buffer no pending device work uses.
  void Release(Buffer buf);

  // Holding a buffer while waiting for others (a restore keeping chunk 0 of
  // a layer until the upload phase) is allowed for at most capacity()/2
  // buffers pool-wide, so at least one always circulates and restores cannot
  // deadlock each other. TryHold counts one held buffer if the budget allows;
  // EndHold ends it (the buffer itself goes back with Release/ReleaseAfter).
  bool TryHold();
  void EndHold();

  size_t capacity() const { return all_.size(); }
  size_t buffer_bytes() const { return bytes_; }
  // Buffers out plus queued acquires.
  size_t outstanding() const { return outstanding_.load(); }
  uint64_t waits() const { return waits_.load(); }  // acquires that had to queue
  void WaitAllReturned();

 private:
  StagingPool(GpuBackend& gpu, boost::asio::thread_pool& pool, size_t bytes);

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

}  // namespace auxstore::gpu
