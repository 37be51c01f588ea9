// CUDA qsa_block_pool: one thread block per pooled block. It repeats the CPU
// reference's operation order (gpu/qsa_block_pool_ref.cc) and is compiled
// with --fmad=false, so results differ from it only by the last-ulp
// differences of expf/sinf/cosf, well under one bf16 ulp.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/bf16.h"
#include "gpu/cuda/qsa_block_pool_launch.h"

namespace auxstore::gpu {

namespace {

__global__ void QsaBlockPoolKernel(const uint16_t* __restrict__ raw,
                                   const uint16_t* __restrict__ k_pool_k,
                                   const uint16_t* __restrict__ k_norm_w,
                                   uint16_t* __restrict__ block_keys, uint32_t start,
                                   uint32_t ratio, uint32_t hd, uint32_t rot, float theta,
                                   float eps) {
  extern __shared__ float shared[];
  float* w = shared;          // [ratio]: scores, then softmax weights
  float* p = shared + ratio;  // [hd]: pooled vector
  __shared__ float denom;

  const uint64_t b = uint64_t{start} + blockIdx.x;
  const uint16_t* rows = raw + b * ratio * hd;
  const uint32_t tid = threadIdx.x, nthreads = blockDim.x;

  // 1. scores, each summed over d in order (as the reference does).
  const float sqrt_hd = sqrtf(static_cast<float>(hd));
  for (uint32_t i = tid; i < ratio; i += nthreads) {
    float dot = 0.0f;
    for (uint32_t d = 0; d < hd; ++d) {
      dot += Bf16ToFloat(rows[uint64_t{i} * hd + d]) * Bf16ToFloat(k_pool_k[d]);
    }
    w[i] = dot / sqrt_hd;
  }
  __syncthreads();
  // Softmax, serial: ratio is small and the order must match the reference.
  if (tid == 0) {
    float m = -INFINITY;
    for (uint32_t i = 0; i < ratio; ++i) m = fmaxf(m, w[i]);
    float sum = 0.0f;
    for (uint32_t i = 0; i < ratio; ++i) {
      w[i] = expf(w[i] - m);
      sum += w[i];
    }
    for (uint32_t i = 0; i < ratio; ++i) w[i] = w[i] / sum;
  }
  __syncthreads();
  // 2. pooled vector: coalesced over d, summed over i in order.
  for (uint32_t d = tid; d < hd; d += nthreads) {
    float acc = 0.0f;
    for (uint32_t i = 0; i < ratio; ++i) acc += w[i] * Bf16ToFloat(rows[uint64_t{i} * hd + d]);
    p[d] = acc;
  }
  __syncthreads();
  // 3. RMSNorm denominator, serial for the reference's summation order.
  if (tid == 0) {
    float sq = 0.0f;
    for (uint32_t d = 0; d < hd; ++d) sq += p[d] * p[d];
    denom = sqrtf(sq / static_cast<float>(hd) + eps);
  }
  __syncthreads();
  // 4-5. normalise, rotate [0, rot) in pairs (j, j+half), round to bf16.
  const uint32_t half = rot / 2;
  const float pos = static_cast<float>(b * ratio);
  uint16_t* out = block_keys + b * hd;
  for (uint32_t d = tid; d < hd; d += nthreads) {
    if (d < half) {
      const float x = (p[d] * Bf16ToFloat(k_norm_w[d])) / denom;
      const float z = (p[d + half] * Bf16ToFloat(k_norm_w[d + half])) / denom;
      const float f =
          static_cast<float>(pow(static_cast<double>(theta), -2.0 * d / static_cast<double>(rot)));
      const float a = pos * f;
      const float c = cosf(a), s = sinf(a);
      out[d] = FloatToBf16(x * c - z * s);
      out[d + half] = FloatToBf16(z * c + x * s);
    } else if (d >= rot) {
      out[d] = FloatToBf16((p[d] * Bf16ToFloat(k_norm_w[d])) / denom);
    }
  }
}

}  // namespace

int LaunchQsaBlockPoolKernel(const QsaKernelParams& a, void* stream) {
  uint32_t threads = a.hd > a.ratio ? a.hd : a.ratio;
  threads = (threads + 31) / 32 * 32;
  if (threads > 1024) threads = 1024;
  QsaBlockPoolKernel<<<a.n, threads, QsaBlockPoolSharedBytes(a.ratio, a.hd),
                       static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint16_t*>(a.raw_keys), static_cast<const uint16_t*>(a.k_pool_k),
      static_cast<const uint16_t*>(a.k_norm_w), static_cast<uint16_t*>(a.block_keys), a.start,
      a.ratio, a.hd, a.rot, a.theta, a.eps);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace auxstore::gpu
