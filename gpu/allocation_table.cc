#include "gpu/allocation_table.h"

#include <string>

namespace auxstore::gpu {

void AllocationTable::Insert(DevicePtr base, uint64_t bytes) {
  std::lock_guard lock(mu_);
  allocs_[base] = bytes;
}

Result<uint64_t> AllocationTable::Erase(DevicePtr base) {
  std::lock_guard lock(mu_);
  auto it = allocs_.find(base);
  if (it == allocs_.end()) {
    return Status::NotFound("device pointer was not returned by Alloc (or was already freed)");
  }
  uint64_t bytes = it->second;
  allocs_.erase(it);
  return bytes;
}

Status AllocationTable::Check(DevicePtr ptr, uint64_t offset, uint64_t bytes) const {
  std::lock_guard lock(mu_);
  auto it = allocs_.upper_bound(ptr);
  if (ptr == kNullDevicePtr || it == allocs_.begin()) {
    return Status::InvalidArgument("device pointer is not in any allocation");
  }
  --it;
  const uint64_t rel = ptr - it->first;
  // Past the end of the allocation below it: in none (whether another one
  // lies below depends on where the allocator put things).
  if (rel >= it->second) return Status::InvalidArgument("device pointer is not in any allocation");
  uint64_t end = 0;
  if (__builtin_add_overflow(rel, offset, &end) || __builtin_add_overflow(end, bytes, &end) ||
      end > it->second) {
    return Status::OutOfRange("device range [+" + std::to_string(rel + offset) + ", +" +
                              std::to_string(rel + offset + bytes) + ") exceeds its " +
                              std::to_string(it->second) + "-byte allocation");
  }
  return Status::Ok();
}

std::map<DevicePtr, uint64_t> AllocationTable::TakeAll() {
  std::lock_guard lock(mu_);
  return std::exchange(allocs_, {});
}

size_t AllocationTable::size() const {
  std::lock_guard lock(mu_);
  return allocs_.size();
}

}  // namespace auxstore::gpu
