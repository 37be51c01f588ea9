// PinnedArena (the pipeline's): one pinned region carved first-fit for in-flight snapshots,
// so the engine's thread never calls cudaHostAlloc / cudaFreeHost (slow,
// and cudaFreeHost synchronizes). A request that does not fit fails at once.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "auxstore/gpu_backend.h"
#include "gpu/range_allocator.h"

namespace auxstore::pipeline {

class PinnedArena {
 public:
  static Result<std::unique_ptr<PinnedArena>> Create(GpuBackend& gpu, uint64_t bytes);
  ~PinnedArena();

  // nullptr when no free range of `bytes` exists now.
  uint8_t* TryAllocate(uint64_t bytes);
  void Free(uint8_t* p);
  uint64_t capacity() const { return bytes_; }
  uint64_t used() const;

 private:
  PinnedArena(GpuBackend& gpu, uint8_t* base, uint64_t bytes);

  GpuBackend& gpu_;
  uint8_t* const base_;
  const uint64_t bytes_;
  mutable std::mutex mu_;
  gpu::RangeAllocator ranges_;  // guarded by mu_
};

}  // namespace auxstore::pipeline
