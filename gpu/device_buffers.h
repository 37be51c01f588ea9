// Allocation and release of a state's device buffers, with the seed's release
// rule (002): each pointer is nulled once its free is attempted, a failure on
// one buffer still frees the others, and the first error is returned.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "auxstore/gpu_backend.h"

namespace auxstore::gpu {

Status FreeEach(GpuBackend& gpu, std::initializer_list<DevicePtr*> ptrs);

// rows * row_bytes, overflow-checked, then Alloc.
Result<DevicePtr> AllocRows(GpuBackend& gpu, uint64_t rows, uint64_t row_bytes);

}  // namespace auxstore::gpu
