// RangeAllocator: first-fit allocation of offsets in [0, capacity), free
// ranges coalesced. Not thread-safe: its owner locks. Used to carve big
// regions (a pinned arena, the host backend's resident heap) into blocks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace auxstore::gpu {

class RangeAllocator {
 public:
  // Every block's offset and length are multiples of `align` (a power of 2).
  RangeAllocator(uint64_t capacity, uint64_t align);

  // The offset of a free block of at least `bytes`, or nullopt.
  std::optional<uint64_t> Allocate(uint64_t bytes);
  // Frees the block at `offset`; false when no block starts there.
  bool Free(uint64_t offset);

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_bytes_; }
  bool empty() const { return used_.empty(); }

 private:
  const uint64_t capacity_;
  const uint64_t align_;
  uint64_t used_bytes_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset -> length, coalesced
  std::map<uint64_t, uint64_t> used_;  // offset -> length
};

}  // namespace auxstore::gpu
