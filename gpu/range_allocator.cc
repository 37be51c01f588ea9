#include "gpu/range_allocator.h"

#include <algorithm>
#include <iterator>

namespace auxstore::gpu {

RangeAllocator::RangeAllocator(uint64_t capacity, uint64_t align)
    : capacity_(capacity / align * align), align_(align) {
  if (capacity_ > 0) free_[0] = capacity_;
}

std::optional<uint64_t> RangeAllocator::Allocate(uint64_t bytes) {
  const uint64_t want = std::max<uint64_t>(bytes, 1);
  if (want > capacity_) return std::nullopt;
  uint64_t rounded = 0;
  if (__builtin_add_overflow(want, align_ - 1, &rounded)) return std::nullopt;
  rounded = rounded / align_ * align_;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < rounded) continue;
    const uint64_t off = it->first, len = it->second;
    free_.erase(it);
    if (len > rounded) free_[off + rounded] = len - rounded;
    used_[off] = rounded;
    used_bytes_ += rounded;
    return off;
  }
  return std::nullopt;
}

bool RangeAllocator::Free(uint64_t offset) {
  auto u = used_.find(offset);
  if (u == used_.end()) return false;
  uint64_t off = u->first, len = u->second;
  used_.erase(u);
  used_bytes_ -= len;
  auto next = free_.lower_bound(off);
  if (next != free_.end() && next->first == off + len) {  // merge right
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {  // merge left
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += len;
      return true;
    }
  }
  free_[off] = len;
  return true;
}

}  // namespace auxstore::gpu
