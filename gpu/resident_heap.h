// ResidentHeap: the host backend's device and pinned memory. Blocks are
// carved out of big regions that are backed by transparent huge pages and
// populated when the region is created, so memory is resident when it is
// handed out — as memory from cudaMalloc / cudaHostAlloc is.
//
// Why not one allocation per block: on this project's VMs the first user
// write to each fresh 4 KiB page costs ~10 us even after MADV_POPULATE_WRITE
// (copies into such pages ran at 0.3-0.5 GB/s, measured), so a restore into
// freshly allocated 256 KiB states paid for page faults a GPU never takes.
// Pages of a huge-page region pay once per 2 MiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu/range_allocator.h"

namespace auxstore::gpu {

class ResidentHeap {
 public:
  ResidentHeap() = default;
  ~ResidentHeap();
  ResidentHeap(const ResidentHeap&) = delete;
  ResidentHeap& operator=(const ResidentHeap&) = delete;

  // The largest block Allocate hands out (2^48 bytes, beyond any host): a
  // size above it is refused before any size arithmetic can wrap.
  static constexpr uint64_t kMaxBytes = uint64_t{1} << 48;

  // `bytes` (1..kMaxBytes), 256-byte aligned, every page mapped. Null when
  // out of memory or out of that range. Thread-safe.
  uint8_t* Allocate(size_t bytes);
  // Frees a block Allocate returned; false for any other pointer. A region
  // whose blocks are all free is returned to the system.
  bool Free(uint8_t* p);

  size_t regions() const;

 private:
  struct Region {
    uint8_t* base;
    RangeAllocator blocks;
  };

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Region>> regions_;  // guarded by mu_
  uint64_t reserved_ = 0;                         // bytes in regions_
};

}  // namespace auxstore::gpu
