// Helpers shared by the gpu tests: random bf16 data, ulp distances, upload.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "auxstore/gpu_backend.h"
#include "gpu/bf16.h"

namespace auxstore::testing {

inline std::vector<uint16_t> RandomBf16(size_t n, std::mt19937_64& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = gpu::FloatToBf16(dist(rng));
  return v;
}

inline std::vector<uint8_t> RandomBytes(size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(rng());
  return v;
}

// Distance in representable bf16 values (0 = identical, 1 = neighbours).
inline int64_t Bf16UlpDistance(uint16_t a, uint16_t b) {
  auto ord = [](uint16_t x) -> int64_t { return (x & 0x8000) ? -int64_t(x & 0x7fff) : int64_t(x); };
  return std::llabs(ord(a) - ord(b));
}

inline std::span<const uint8_t> AsBytes(const std::vector<uint16_t>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 2};
}

// Allocates a device buffer holding `v`, synchronously.
inline DevicePtr Upload(GpuBackend& gpu, std::span<const uint8_t> bytes) {
  auto p = gpu.Alloc(bytes.size());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return kNullDevicePtr;
  EXPECT_TRUE(gpu.CopyH2DAsync(bytes, *p, 0, kDefaultStream).ok());
  EXPECT_TRUE(gpu.Synchronize(kDefaultStream).ok());
  return *p;
}

inline std::vector<uint16_t> Download16(GpuBackend& gpu, DevicePtr p, size_t count) {
  std::vector<uint16_t> out(count);
  Status st = gpu.CopyD2HOnStream(
      p, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), count * 2), kDefaultStream);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

}  // namespace auxstore::testing
