// Allocation and release of a state's device buffers, with the seed's release
// rule (002): each pointer is nulled once its free is attempted, a failure on
// one buffer still frees the others, and the first error is returned.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "auxstore/gpu_backend.h"

namespace auxstore::gpu {

Status FreeEach(GpuBackend& gpu, std::initializer_list<DevicePtr*> ptrs);
// Release of a state's buffers: FreeEach when the state owns them, else
// only forgets them (engine-owned buffers are never freed here).
Status ReleaseBuffers(GpuBackend& gpu, bool owned, std::initializer_list<DevicePtr*> ptrs);

// An engine-owned buffer a borrowed state will use: not null, `have` bytes
// >= rows * row_bytes (overflow-checked), and [ptr, ptr+have) device memory
// of `gpu` inside one allocation (GpuBackend::CheckDeviceRange).
// InvalidArgument naming `name` otherwise.
Status CheckBorrowed(const GpuBackend& gpu, const char* state, const char* name, DevicePtr ptr,
                     uint64_t have, uint64_t rows, uint64_t row_bytes);

// rows * row_bytes, overflow-checked, then Alloc.
Result<DevicePtr> AllocRows(GpuBackend& gpu, uint64_t rows, uint64_t row_bytes);

}  // namespace auxstore::gpu
