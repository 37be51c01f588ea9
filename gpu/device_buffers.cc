#include "gpu/device_buffers.h"

#include <string>

namespace auxstore::gpu {

Status FreeEach(GpuBackend& gpu, std::initializer_list<DevicePtr*> ptrs) {
  Status first;
  for (DevicePtr* p : ptrs) {
    if (*p == kNullDevicePtr) continue;
    Status st = gpu.Free(*p);
    *p = kNullDevicePtr;  // attempted: never freed twice
    if (!st.ok() && first.ok()) first = std::move(st);
  }
  return first;
}

Status ReleaseBuffers(GpuBackend& gpu, bool owned, std::initializer_list<DevicePtr*> ptrs) {
  if (owned) return FreeEach(gpu, ptrs);
  for (DevicePtr* p : ptrs) *p = kNullDevicePtr;
  return Status::Ok();
}

Status CheckBorrowed(const GpuBackend& gpu, const char* state, const char* name, DevicePtr ptr,
                     uint64_t have, uint64_t rows, uint64_t row_bytes) {
  uint64_t need = 0;
  if (__builtin_mul_overflow(rows, row_bytes, &need)) {
    return Status::InvalidArgument(std::string(state) + ": " + name + " size overflows");
  }
  if (ptr == kNullDevicePtr && need > 0) {
    return Status::InvalidArgument(std::string(state) + ": " + name + " is null");
  }
  if (have < need) {
    return Status::InvalidArgument(std::string(state) + ": " + name + " holds " +
                                   std::to_string(have) + " bytes; the geometry needs " +
                                   std::to_string(need) + " (" + std::to_string(rows) +
                                   " rows of " + std::to_string(row_bytes) + ")");
  }
  // The buffer must really be `have` bytes of this backend's device memory.
  if (have == 0) return Status::Ok();
  Status st = gpu.CheckDeviceRange(ptr, have);
  if (!st.ok()) {
    return Status::InvalidArgument(std::string(state) + ": " + name + " (" + std::to_string(have) +
                                   " bytes declared): " + st.message());
  }
  return Status::Ok();
}

Result<DevicePtr> AllocRows(GpuBackend& gpu, uint64_t rows, uint64_t row_bytes) {
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(rows, row_bytes, &bytes) || bytes > SIZE_MAX) {
    return Status::InvalidArgument(std::to_string(rows) + " rows of " + std::to_string(row_bytes) +
                                   " bytes overflow");
  }
  return gpu.Alloc(static_cast<size_t>(bytes));
}

}  // namespace auxstore::gpu
