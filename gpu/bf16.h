// bf16 <-> fp32 conversions shared by the CPU reference and the CUDA kernel,
// so both round the same way (round-to-nearest-even, NaN stays NaN).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define AUXSTORE_HD __host__ __device__
#else
#define AUXSTORE_HD
#endif

namespace auxstore::gpu {

AUXSTORE_HD inline float Bf16ToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

AUXSTORE_HD inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // qNaN
  u += 0x7fffu + ((u >> 16) & 1u);  // ties to even; overflow rounds to inf
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace auxstore::gpu
