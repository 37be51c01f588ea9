// The CUDA backend against the CPU reference. Built everywhere; every test
// skips when no CUDA device is usable (no driver, no GPU, or a build without
// CUDA).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <random>
#include <vector>

#include "gpu/bf16.h"
#include "gpu/qsa_block_pool_ref.h"
#include "tests/gpu/gpu_test_util.h"

namespace auxstore {
namespace {

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = CreateBackend(BackendKind::kCuda);
    if (!b.ok()) {
      GTEST_SKIP() << "no CUDA device: " << b.status().ToString();
    }
    gpu_ = std::move(*b);
    auto s = gpu_->CreateStream();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    stream_ = *s;
  }
  void TearDown() override {
    if (gpu_) {
      EXPECT_TRUE(gpu_->DestroyStream(stream_).ok());
    }
  }
  std::unique_ptr<GpuBackend> gpu_;
  StreamHandle stream_ = 0;
};

TEST_F(CudaBackendTest, PinnedRoundTripEventsAndHostFuncs) {
  const size_t n = 8 << 20;
  auto pinned = gpu_->AllocPinned(n);
  ASSERT_TRUE(pinned.ok());
  std::mt19937_64 rng(1);
  for (size_t i = 0; i < n; ++i) (*pinned)[i] = static_cast<uint8_t>(rng());
  auto d = gpu_->Alloc(n);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(gpu_->CopyH2DAsync({*pinned, n}, *d, 0, stream_).ok());
  auto ev = gpu_->CreateEvent();
  ASSERT_TRUE(ev.ok());
  ASSERT_TRUE(gpu_->RecordEvent(*ev, stream_).ok());
  std::atomic<bool> ran{false};
  ASSERT_TRUE(gpu_->LaunchHostFunc(stream_, [&] { ran = true; }).ok());
  ASSERT_TRUE(gpu_->SynchronizeEvent(*ev).ok());
  std::vector<uint8_t> back(n);
  ASSERT_TRUE(gpu_->CopyD2HOnStream(*d, 0, back, stream_).ok());
  EXPECT_TRUE(ran.load());
  EXPECT_TRUE(*gpu_->QueryEvent(*ev));
  EXPECT_EQ(std::memcmp(back.data(), *pinned, n), 0);
  EXPECT_EQ(gpu_->CopyH2DAsync({*pinned, n}, *d, 1, stream_).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(gpu_->DestroyEvent(*ev).ok());
  EXPECT_TRUE(gpu_->Free(*d).ok());
  EXPECT_TRUE(gpu_->FreePinned(*pinned).ok());
}

struct Shape {
  uint32_t hd, ratio, rot, start, n;
  float theta, eps;
};

// One launch on the device and on the reference; returns the worst ulp
// distance (near-zero outputs, where cancellation makes ulps meaningless,
// are held to a tiny absolute error instead).
int64_t CompareWithReference(GpuBackend& gpu, StreamHandle s, const Shape& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t tokens = uint64_t(c.start + c.n) * c.ratio + (seed % 5);
  auto raw = testing::RandomBf16(tokens * c.hd, rng);
  auto q = testing::RandomBf16(c.hd, rng, 0.3f), w = testing::RandomBf16(c.hd, rng);
  std::vector<uint16_t> want(uint64_t(c.start + c.n) * c.hd, 0x1234);
  QsaBlockPoolArgs a{.ingested = tokens,
                     .start = c.start,
                     .n = c.n,
                     .ratio = c.ratio,
                     .hd = c.hd,
                     .rot = c.rot,
                     .theta = c.theta,
                     .eps = c.eps};
  EXPECT_TRUE(gpu::QsaBlockPoolReference(a, raw, q, w, want).ok());
  a.raw_keys = testing::Upload(gpu, testing::AsBytes(raw));
  a.k_pool_k = testing::Upload(gpu, testing::AsBytes(q));
  a.k_norm_w = testing::Upload(gpu, testing::AsBytes(w));
  std::vector<uint16_t> init(want.size(), 0x1234);
  a.block_keys = testing::Upload(gpu, testing::AsBytes(init));
  Status st = gpu.QsaBlockPool(a, s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(gpu.Synchronize(s).ok());
  auto got = testing::Download16(gpu, a.block_keys, want.size());
  int64_t worst = 0;
  for (uint64_t b = 0; b < c.start + c.n; ++b) {
    float row_max = 0;
    for (uint32_t d = 0; d < c.hd; ++d)
      row_max = std::max(row_max, std::fabs(gpu::Bf16ToFloat(want[b * c.hd + d])));
    for (uint32_t d = 0; d < c.hd; ++d) {
      const size_t i = b * c.hd + d;
      const int64_t ulps = testing::Bf16UlpDistance(got[i], want[i]);
      const float diff = std::fabs(gpu::Bf16ToFloat(got[i]) - gpu::Bf16ToFloat(want[i]));
      if (ulps > 1 && diff > row_max * 0x1p-20f) {
        ADD_FAILURE() << "hd " << c.hd << " ratio " << c.ratio << " rot " << c.rot << " block " << b
                      << " dim " << d << ": " << ulps << " ulps";
        return ulps;
      }
      if (diff > row_max * 0x1p-20f) worst = std::max(worst, ulps);
    }
  }
  for (DevicePtr p : {a.raw_keys, a.k_pool_k, a.k_norm_w, a.block_keys})
    EXPECT_TRUE(gpu.Free(p).ok());
  return worst;
}

TEST_F(CudaBackendTest, KernelMatchesReferenceWithinOneUlp) {
  const uint32_t hds[] = {8, 32, 64, 96, 128, 192, 256, 512};
  const uint32_t ratios[] = {1, 2, 3, 4, 7, 8, 16, 32, 64};
  std::mt19937_64 rng(42);
  int64_t worst = 0;
  for (uint32_t hd : hds) {
    for (uint32_t ratio : ratios) {
      const uint32_t rots[] = {0, 2, (hd / 2) & ~1u, hd};
      const uint32_t rot = rots[rng() % 4];
      const Shape c{hd,
                    ratio,
                    rot,
                    uint32_t(rng() % 7),
                    1 + uint32_t(rng() % 300),
                    (rng() % 2) ? 10000.f : 1e6f,
                    1e-6f};
      worst = std::max(worst, CompareWithReference(*gpu_, stream_, c, rng()));
      if (HasFailure()) return;
    }
  }
  // rot == hd and rot < hd at large positions (angles far from zero).
  worst = std::max(
      worst, CompareWithReference(*gpu_, stream_, {128, 64, 128, 2000, 64, 10000.f, 1e-6f}, 9));
  worst = std::max(
      worst, CompareWithReference(*gpu_, stream_, {128, 16, 64, 4000, 100, 10000.f, 1e-6f}, 10));
  EXPECT_LE(worst, 1);
}

TEST_F(CudaBackendTest, RefusedLaunchWritesNothing) {
  std::mt19937_64 rng(5);
  const uint32_t hd = 64, ratio = 4;
  auto raw = testing::RandomBf16(32 * hd, rng), q = testing::RandomBf16(hd, rng);
  std::vector<uint16_t> sentinel(8 * hd, 0x4242);
  QsaBlockPoolArgs a{.raw_keys = testing::Upload(*gpu_, testing::AsBytes(raw)),
                     .k_pool_k = testing::Upload(*gpu_, testing::AsBytes(q)),
                     .k_norm_w = testing::Upload(*gpu_, testing::AsBytes(q)),
                     .block_keys = testing::Upload(*gpu_, testing::AsBytes(sentinel)),
                     .ingested = 32,
                     .start = 0,
                     .n = 8,
                     .ratio = ratio,
                     .hd = hd,
                     .rot = 64,
                     .theta = 10000.f,
                     .eps = 1e-6f};
  auto refuse = [&](QsaBlockPoolArgs bad) { EXPECT_FALSE(gpu_->QsaBlockPool(bad, stream_).ok()); };
  QsaBlockPoolArgs b = a;
  b.ingested = 31;
  refuse(b);
  b = a;
  b.rot = 63;
  refuse(b);
  b = a;
  b.rot = 66;
  refuse(b);
  b = a;
  b.n = 0;
  refuse(b);
  b = a;
  b.n = 9;
  b.ingested = 36;
  refuse(b);  // block_keys holds 8 blocks
  ASSERT_TRUE(gpu_->Synchronize(stream_).ok());
  EXPECT_EQ(testing::Download16(*gpu_, a.block_keys, sentinel.size()), sentinel);
  for (DevicePtr p : {a.raw_keys, a.k_pool_k, a.k_norm_w, a.block_keys})
    EXPECT_TRUE(gpu_->Free(p).ok());
}

}  // namespace
}  // namespace auxstore
