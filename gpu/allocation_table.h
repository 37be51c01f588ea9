// Device allocations a backend has handed out, so every copy and launch is
// bounds-checked when it is enqueued instead of faulting later.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "auxstore/gpu_backend.h"

namespace auxstore::gpu {

class AllocationTable {
 public:
  void Insert(DevicePtr base, uint64_t bytes);
  // The size of the allocation starting at `base`; NotFound if none does.
  Result<uint64_t> Erase(DevicePtr base);
  // OK when [ptr+offset, ptr+offset+bytes) lies inside one allocation.
  Status Check(DevicePtr ptr, uint64_t offset, uint64_t bytes) const;
  std::map<DevicePtr, uint64_t> TakeAll();
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<DevicePtr, uint64_t> allocs_;  // base -> bytes
};

}  // namespace auxstore::gpu
