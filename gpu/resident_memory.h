// Host memory that is resident when it is handed out, as device memory from
// cudaMalloc and pinned memory from cudaHostAlloc are: the host backend's
// allocations must not charge first-touch page faults to the copies that
// later write them (on a VM each fault costs microseconds).
#pragma once

#include <cstddef>
#include <cstdint>

namespace auxstore::gpu {

// `bytes` (> 0) of memory aligned to at least 256 bytes, every page already
// mapped; large blocks use transparent huge pages where the kernel allows.
// Null when out of memory. Free with std::free.
uint8_t* AllocResident(size_t bytes);

}  // namespace auxstore::gpu
