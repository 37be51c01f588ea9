// The CUDA backend (built only with AUXSTORE_WITH_CUDA).
//
// Stream and event handles are the cudaStream_t / cudaEvent_t values
// themselves, so an engine passes its own streams straight through; stream 0
// is the legacy default stream.
#pragma once

#include <memory>

#include "auxstore/gpu_backend.h"

namespace auxstore::gpu {

// Unavailable (with the runtime's reason) when no usable device is present,
// e.g. no driver.
Result<std::unique_ptr<GpuBackend>> CreateCudaBackend(int device);

}  // namespace auxstore::gpu
