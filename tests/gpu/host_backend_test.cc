// The host backend: real asynchrony, stream order, events, host callbacks,
// bounds checks, pinned-buffer misuse detection, and the factory.
#include "gpu/host_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <numeric>
#include <vector>

#include "tests/gpu/gpu_test_util.h"

namespace auxstore {
namespace {

using namespace std::chrono_literals;
using gpu::HostBackend;

TEST(HostBackend, CopyRoundTrip) {
  HostBackend gpu;
  std::vector<uint8_t> src(1000);
  std::iota(src.begin(), src.end(), 0);
  auto p = gpu.Alloc(1024);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(gpu.CopyH2DAsync(src, *p, 24, kDefaultStream).ok());
  std::vector<uint8_t> back(1000);
  ASSERT_TRUE(gpu.CopyD2HOnStream(*p, 24, back, kDefaultStream).ok());
  EXPECT_EQ(back, src);
  EXPECT_TRUE(gpu.Free(*p).ok());
  EXPECT_FALSE(gpu.Free(*p).ok()) << "double free is reported";
  EXPECT_EQ(gpu.live_allocations(), 0u);
}

// Issue 23: Alloc(2^64-1) succeeded (the heap's rounding wrapped) and a copy
// into it crashed. Overflowing sizes are InvalidArgument.
TEST(HostBackend, HugeAllocationsAreInvalidArgument) {
  HostBackend gpu;
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 100, (size_t{1} << 48) + 1}) {
    auto p = gpu.Alloc(bytes);
    ASSERT_FALSE(p.ok()) << bytes;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << p.status().message();
    auto q = gpu.AllocPinned(bytes);
    ASSERT_FALSE(q.ok()) << bytes;
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument) << q.status().message();
  }
  EXPECT_EQ(gpu.live_allocations(), 0u);
  EXPECT_EQ(gpu.live_pinned(), 0u);
}

// The stream is held shut by a host function until the test opens it: an
// enqueue that waited for its copy would never return (the test hangs and
// ctest's timeout fails it), and the copy cannot have run before the gate.
TEST(HostBackend, CopiesAreAsynchronous) {
  HostBackend gpu;
  auto s = gpu.CreateStream();
  ASSERT_TRUE(s.ok());
  auto p = gpu.Alloc(8);
  ASSERT_TRUE(p.ok());
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  ASSERT_TRUE(gpu.LaunchHostFunc(*s, [opened] { opened.wait(); }).ok());
  const std::vector<uint8_t> src{1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(gpu.CopyH2DAsync(src, *p, 0, *s).ok());  // returns with the stream shut
  auto ev = gpu.CreateEvent();
  ASSERT_TRUE(ev.ok());
  ASSERT_TRUE(gpu.RecordEvent(*ev, *s).ok());
  EXPECT_FALSE(*gpu.QueryEvent(*ev));
  EXPECT_NE(std::memcmp(reinterpret_cast<void*>(*p), src.data(), 8), 0) << "copy ran early";
  gate.set_value();
  ASSERT_TRUE(gpu.SynchronizeEvent(*ev).ok());
  EXPECT_TRUE(*gpu.QueryEvent(*ev));
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(*p), src.data(), 8), 0);
  EXPECT_TRUE(gpu.DestroyEvent(*ev).ok());
  EXPECT_TRUE(gpu.DestroyStream(*s).ok());
  EXPECT_TRUE(gpu.Free(*p).ok());
}

TEST(HostBackend, HostFuncsRunInStreamOrder) {
  HostBackend gpu(gpu::HostBackendOptions{.op_delay = 1ms});
  auto s = gpu.CreateStream();
  ASSERT_TRUE(s.ok());
  std::vector<int> order;
  std::mutex mu;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(gpu.LaunchHostFunc(*s,
                                   [&, i] {
                                     std::lock_guard l(mu);
                                     order.push_back(i);
                                   })
                    .ok());
  }
  ASSERT_TRUE(gpu.Synchronize(*s).ok());
  std::vector<int> want(20);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(order, want);
  EXPECT_FALSE(gpu.LaunchHostFunc(*s, nullptr).ok());
}

TEST(HostBackend, StreamWaitEventOrdersAcrossStreams) {
  HostBackend gpu;
  auto slow = gpu.CreateStream(), fast = gpu.CreateStream();
  ASSERT_TRUE(slow.ok() && fast.ok());
  ASSERT_TRUE(gpu.SetStreamDelay(*slow, 80ms).ok());
  auto p = gpu.Alloc(4);
  const std::vector<uint8_t> a{1, 1, 1, 1}, b{2, 2, 2, 2};
  ASSERT_TRUE(gpu.CopyH2DAsync(a, *p, 0, *slow).ok());
  auto ev = gpu.CreateEvent();
  ASSERT_TRUE(gpu.RecordEvent(*ev, *slow).ok());
  ASSERT_TRUE(gpu.StreamWaitEvent(*fast, *ev).ok());
  ASSERT_TRUE(gpu.CopyH2DAsync(b, *p, 0, *fast).ok());  // must land after `a`
  ASSERT_TRUE(gpu.Synchronize(*fast).ok());
  std::vector<uint8_t> out(4);
  ASSERT_TRUE(gpu.CopyD2HOnStream(*p, 0, out, *fast).ok());
  EXPECT_EQ(out, b);
}

TEST(HostBackend, RejectsOutOfBoundsAndUnknownHandles) {
  HostBackend gpu;
  auto p = gpu.Alloc(16);
  std::vector<uint8_t> src(17), dst(8);
  EXPECT_EQ(gpu.CopyH2DAsync(src, *p, 0, kDefaultStream).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(gpu.CopyH2DAsync(std::span(src).first(8), *p, 9, kDefaultStream).code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(gpu.CopyD2HAsync(*p, ~uint64_t{0}, dst, kDefaultStream).code(),
            StatusCode::kOutOfRange);
  EXPECT_FALSE(gpu.CopyH2DAsync(src, 12345, 0, kDefaultStream).ok());
  EXPECT_FALSE(gpu.CopyH2DAsync(std::span(src).first(8), *p, 0, 999).ok());
  EXPECT_FALSE(gpu.Synchronize(999).ok());
  EXPECT_FALSE(gpu.RecordEvent(999, kDefaultStream).ok());
  EXPECT_FALSE(gpu.DestroyStream(kDefaultStream).ok());
  EXPECT_FALSE(gpu.Alloc(0).ok());
}

TEST(HostBackend, FreeingPinnedBufferUnderPendingCopyIsReported) {
  HostBackend gpu(gpu::HostBackendOptions{.op_delay = 50ms});
  auto pinned = gpu.AllocPinned(64);
  ASSERT_TRUE(pinned.ok());
  auto p = gpu.Alloc(64);
  ASSERT_TRUE(gpu.CopyH2DAsync({*pinned, 64}, *p, 0, kDefaultStream).ok());
  Status st = gpu.FreePinned(*pinned);  // the copy has not run yet
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(gpu.pinned_misuse_count(), 1u);
  ASSERT_TRUE(gpu.Synchronize(kDefaultStream).ok());
  EXPECT_EQ(gpu.live_pinned(), 0u) << "the deferred free happens when the copy ends";
  // After completion, freeing is fine.
  auto again = gpu.AllocPinned(64);
  ASSERT_TRUE(gpu.CopyH2DAsync({*again, 64}, *p, 0, kDefaultStream).ok());
  ASSERT_TRUE(gpu.Synchronize(kDefaultStream).ok());
  EXPECT_TRUE(gpu.FreePinned(*again).ok());
  EXPECT_EQ(gpu.pinned_misuse_count(), 1u);
}

TEST(HostBackend, QsaBlockPoolRejectsTooSmallBuffersAndWritesNothing) {
  HostBackend gpu;
  std::mt19937_64 rng(3);
  const uint32_t hd = 8, ratio = 2;
  auto raw = testing::RandomBf16(16 * hd, rng), q = testing::RandomBf16(hd, rng);
  auto raw_d = testing::Upload(gpu, testing::AsBytes(raw));
  auto q_d = testing::Upload(gpu, testing::AsBytes(q));
  std::vector<uint16_t> sentinel(4 * hd, 0x5555);
  auto out_d = testing::Upload(gpu, testing::AsBytes(sentinel));  // room for 4 blocks
  QsaBlockPoolArgs a{.raw_keys = raw_d,
                     .k_pool_k = q_d,
                     .k_norm_w = q_d,
                     .block_keys = out_d,
                     .ingested = 16,
                     .start = 0,
                     .n = 5,
                     .ratio = ratio,
                     .hd = hd,
                     .rot = 4,
                     .theta = 10000.f,
                     .eps = 1e-6f};
  EXPECT_EQ(gpu.QsaBlockPool(a, kDefaultStream).code(), StatusCode::kOutOfRange);
  a.n = 4;
  a.rot = 5;
  EXPECT_EQ(gpu.QsaBlockPool(a, kDefaultStream).code(), StatusCode::kInvalidArgument);
  a.rot = 4;
  a.ingested = 7;
  EXPECT_EQ(gpu.QsaBlockPool(a, kDefaultStream).code(), StatusCode::kOutOfRange);
  a.ingested = 16;
  a.k_norm_w = kNullDevicePtr;
  EXPECT_EQ(gpu.QsaBlockPool(a, kDefaultStream).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(gpu.Synchronize(kDefaultStream).ok());
  EXPECT_EQ(testing::Download16(gpu, out_d, 4 * hd), sentinel);
  a.k_norm_w = q_d;
  ASSERT_TRUE(gpu.QsaBlockPool(a, kDefaultStream).ok());
  ASSERT_TRUE(gpu.Synchronize(kDefaultStream).ok());
  EXPECT_NE(testing::Download16(gpu, out_d, 4 * hd), sentinel);
}

TEST(BackendFactory, HostOnRequestAndAutoFallsBack) {
  auto host = CreateBackend(BackendKind::kHost);
  ASSERT_TRUE(host.ok());
  EXPECT_EQ((*host)->kind(), BackendKind::kHost);
  EXPECT_EQ((*host)->name(), "host");
  auto any = CreateBackend(BackendKind::kAuto);
  ASSERT_TRUE(any.ok()) << any.status().ToString();
  auto cuda = CreateBackend(BackendKind::kCuda);
  if ((*any)->kind() == BackendKind::kHost) {
    // No usable device here: asking for CUDA explicitly says why.
    EXPECT_EQ(cuda.status().code(), StatusCode::kUnavailable);
    EXPECT_FALSE(cuda.status().message().empty());
  } else {
    ASSERT_TRUE(cuda.ok());
    EXPECT_EQ((*cuda)->kind(), BackendKind::kCuda);
  }
}

}  // namespace
}  // namespace auxstore
