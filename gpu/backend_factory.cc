// CreateBackend: CUDA when built and a device is present, else the host backend.
#include <memory>
#include <string>

#include "auxstore/gpu_backend.h"
#include "gpu/host_backend.h"
#ifdef AUXSTORE_WITH_CUDA
#include "gpu/cuda/cuda_backend.h"
#endif

namespace auxstore {

std::string_view BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kAuto:
      return "auto";
    case BackendKind::kHost:
      return "host";
    case BackendKind::kCuda:
      return "cuda";
  }
  return "unknown";
}

Result<std::unique_ptr<GpuBackend>> CreateBackend(BackendKind kind, int device) {
  if (device < -1) {
    return Status::InvalidArgument("device index " + std::to_string(device) + " is negative");
  }
  if (kind == BackendKind::kHost) return std::unique_ptr<GpuBackend>(new gpu::HostBackend());
#ifdef AUXSTORE_WITH_CUDA
  auto cuda = gpu::CreateCudaBackend(device);
  if (cuda.ok() || kind == BackendKind::kCuda) return cuda;
#else
  if (kind == BackendKind::kCuda) {
    return Status::Unavailable("auxstore was built without CUDA (nvcc was not found)");
  }
#endif
  return std::unique_ptr<GpuBackend>(new gpu::HostBackend());
}

}  // namespace auxstore
