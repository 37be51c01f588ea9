// Launch of the CUDA qsa_block_pool kernel (arguments already checked). Kept
// free of C++20 headers: the .cu file is compiled as CUDA C++17.
#pragma once

#include <cstddef>
#include <cstdint>

namespace auxstore::gpu {

struct QsaKernelParams {
  const void* raw_keys;
  const void* k_pool_k;
  const void* k_norm_w;
  void* block_keys;
  uint32_t start, n, ratio, hd, rot;
  float theta, eps;
};

// Enqueues the kernel on `stream` (a cudaStream_t). Returns the cudaError_t
// of the launch as an int, 0 on success.
int LaunchQsaBlockPoolKernel(const QsaKernelParams& params, void* stream);

// Shared memory bytes one launch needs; launches needing more than the
// device's default (48 KiB) are refused by the backend.
inline size_t QsaBlockPoolSharedBytes(uint32_t ratio, uint32_t hd) {
  return (static_cast<size_t>(ratio) + hd) * sizeof(float);
}

}  // namespace auxstore::gpu
