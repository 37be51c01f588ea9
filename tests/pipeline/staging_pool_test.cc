// StagingPool: a buffer is reused only after the copy reading it completed
// (host backend with slow streams), backpressure when exhausted, teardown
// waits for buffers still in flight.
#include "pipeline/staging_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <future>

#include "gpu/host_backend.h"
#include "pipeline/pinned_arena.h"

namespace auxstore {
namespace {

using namespace std::chrono_literals;
constexpr size_t kChunk = 4096, kChunks = 16;

// Uploads kChunks chunks, each filled with its index, through a 2-buffer
// pool; returns how many chunks landed wrong on the device. All kChunks
// acquires are queued at once, so 2 buffers make the rest wait whatever the
// speeds. Returning a buffer early (the negative control) keeps the stream
// shut until every chunk was issued, so no copy can run before its buffer is
// refilled: the corruption is certain, not a race.
size_t UploadThroughPool(bool release_after_copy, uint64_t* waits) {
  gpu::HostBackend gpu(gpu::HostBackendOptions{.op_delay = 1ms});
  boost::asio::thread_pool pool(2);
  auto stream = gpu.CreateStream();
  auto dev = gpu.Alloc(kChunk * kChunks);
  size_t bad = 0;
  std::promise<void> gate;
  if (!release_after_copy) {
    std::shared_future<void> opened = gate.get_future().share();
    EXPECT_TRUE(gpu.LaunchHostFunc(*stream, [opened] { opened.wait(); }).ok());
  }
  {
    auto sp = pipeline::StagingPool::Create(gpu, pool, 2, kChunk);
    EXPECT_TRUE(sp.ok());
    std::atomic<size_t> issued{0};
    std::promise<void> all_issued;
    for (size_t k = 0; k < kChunks; ++k) {
      (*sp)->AsyncAcquire([&, k](pipeline::StagingPool::Lease b) {
        std::memset(b.data(), static_cast<int>(k + 1), b.size());
        EXPECT_TRUE(gpu.CopyH2DAsync(b.span(), *dev, k * kChunk, *stream).ok());
        if (release_after_copy) {
          EXPECT_TRUE(b.ReturnAfter(*stream).ok());
        } else {
          b.Return();  // wrong on purpose: the copy has not run yet
        }
        if (++issued == kChunks) all_issued.set_value();
      });
    }
    all_issued.get_future().wait();
    if (!release_after_copy) gate.set_value();
    EXPECT_TRUE(gpu.Synchronize(*stream).ok());
    *waits = (*sp)->waits();
  }  // the pool's destructor waits for every buffer
  std::vector<uint8_t> out(kChunk * kChunks);
  EXPECT_TRUE(gpu.CopyD2HOnStream(*dev, 0, out, *stream).ok());
  for (size_t k = 0; k < kChunks; ++k) {
    for (size_t i = 0; i < kChunk; ++i) {
      if (out[k * kChunk + i] != k + 1) {
        ++bad;
        break;
      }
    }
  }
  EXPECT_EQ(gpu.pinned_misuse_count(), 0u);
  pool.join();
  return bad;
}

TEST(StagingPool, BufferIsReusedOnlyAfterItsCopyCompleted) {
  uint64_t waits = 0;
  EXPECT_EQ(UploadThroughPool(/*release_after_copy=*/true, &waits), 0u);
  EXPECT_GT(waits, 0u) << "16 chunks through 2 buffers must wait for returns";
}

// The check above can fail: returning buffers when the call returns (not
// when the copy completes) corrupts the upload (every copy reads a buffer
// refilled since; at most the last two chunks land right).
TEST(StagingPool, NegativeControlEarlyReleaseCorruptsTheUpload) {
  uint64_t waits = 0;
  EXPECT_GE(UploadThroughPool(/*release_after_copy=*/false, &waits), kChunks - 2);
}

TEST(StagingPool, ALeaseDroppedReturnsItsBufferOnceAndHoldsAreBounded) {
  gpu::HostBackend gpu;
  boost::asio::thread_pool pool(1);
  {
    auto sp = pipeline::StagingPool::Create(gpu, pool, 2, 64);
    ASSERT_TRUE(sp.ok());
    pipeline::StagingPool::Lease a = (*sp)->TryAcquire();
    ASSERT_TRUE(a);
    pipeline::StagingPool::Lease b = (*sp)->TryAcquire();
    ASSERT_TRUE(b);
    EXPECT_FALSE((*sp)->TryAcquire()) << "both out";
    EXPECT_TRUE(a.TryHold()) << "one of two may be held";
    EXPECT_FALSE(b.TryHold()) << "the budget is capacity / 2";
    pipeline::StagingPool::Lease moved = std::move(a);
    EXPECT_FALSE(a);
    EXPECT_EQ((*sp)->outstanding(), 2u);
    moved = pipeline::StagingPool::Lease();  // dropped: returned, hold ended
    EXPECT_EQ((*sp)->outstanding(), 1u);
    EXPECT_TRUE(b.TryHold()) << "the hold went back with the buffer";
  }  // b returns here; the pool's destructor would wait forever otherwise
  pool.join();
}

TEST(StagingPool, RejectsEmptyPools) {
  gpu::HostBackend gpu;
  boost::asio::thread_pool pool(1);
  EXPECT_FALSE(pipeline::StagingPool::Create(gpu, pool, 0, 16).ok());
  EXPECT_FALSE(pipeline::StagingPool::Create(gpu, pool, 1, 0).ok());
  pool.join();
}

TEST(PinnedArena, FirstFitWithCoalescing) {
  gpu::HostBackend gpu;
  auto arena = pipeline::PinnedArena::Create(gpu, 4096);
  ASSERT_TRUE(arena.ok());
  uint8_t* a = (*arena)->TryAllocate(1000);
  uint8_t* b = (*arena)->TryAllocate(1000);
  uint8_t* c = (*arena)->TryAllocate(1000);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ((*arena)->TryAllocate(2000), nullptr);
  (*arena)->Free(b);
  (*arena)->Free(a);  // a and b coalesce
  uint8_t* d = (*arena)->TryAllocate(2000);
  EXPECT_EQ(d, a);
  (*arena)->Free(c);
  (*arena)->Free(d);
  EXPECT_EQ((*arena)->used(), 0u);
  EXPECT_NE((*arena)->TryAllocate(4096), nullptr);
}

}  // namespace
}  // namespace auxstore
