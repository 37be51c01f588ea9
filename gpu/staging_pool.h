// StagingPool: a bounded set of pinned host buffers owned by an Asio strand.
//
// A buffer goes back to the pool only when the device work reading (or
// writing) it has completed — ReleaseAfter enqueues a host callback on the
// stream that posts the return to the strand — never when the enqueuing call
// returns. When every buffer is out, AsyncAcquire queues the handler (FIFO)
// instead of blocking: the bound is the restore path's memory bound.
#pragma once

#include <atomic>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
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
  // Returns `buf` once all work enqueued on `stream` so far has completed.
  // If the callback cannot be enqueued, synchronizes the stream first.
  Status ReleaseAfter(Buffer buf, StreamHandle stream);
  // Returns a buffer no pending device work uses.
  void Release(Buffer buf);

  size_t capacity() const { return all_.size(); }
  size_t buffer_bytes() const { return bytes_; }
  size_t outstanding() const { return outstanding_.load(); }
  uint64_t waits() const { return waits_.load(); }  // acquires that had to queue
  void WaitAllReturned();

 private:
  StagingPool(GpuBackend& gpu, boost::asio::thread_pool& pool, size_t bytes);
  void ReturnOnStrand(Buffer buf);

  GpuBackend& gpu_;
  boost::asio::thread_pool& pool_;
  boost::asio::strand<boost::asio::thread_pool::executor_type> strand_;
  const size_t bytes_;
  std::vector<uint8_t*> all_;
  // Touched only on strand_.
  std::vector<Buffer> free_;
  std::deque<Handler> waiters_;
  // For WaitAllReturned.
  std::atomic<size_t> outstanding_{0};
  std::atomic<uint64_t> waits_{0};
  std::mutex mu_;
  std::condition_variable returned_cv_;
};

}  // namespace auxstore::gpu
