#include "gpu/cuda/cuda_backend.h"

#include <cuda.h>  // driver types only: the driver is reached through the runtime
#include <cuda_runtime_api.h>

#include <string>

#include "gpu/allocation_table.h"
#include "gpu/cuda/qsa_block_pool_launch.h"
#include "gpu/qsa_block_pool_args.h"

namespace auxstore::gpu {

namespace {

Status CudaStatus(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return Status::Ok();
  std::string msg =
      std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (err == cudaErrorMemoryAllocation) return Status::OutOfRange(std::move(msg));
  if (err == cudaErrorInvalidValue) return Status::InvalidArgument(std::move(msg));
  return Status::Internal(std::move(msg));
}

cudaStream_t ToStream(StreamHandle h) { return reinterpret_cast<cudaStream_t>(h); }
cudaEvent_t ToEvent(EventHandle h) { return reinterpret_cast<cudaEvent_t>(h); }

void CUDART_CB RunHostFunc(void* data) {
  // Runs on CUDA's callback thread: no CUDA calls allowed, so the callback
  // (documented in gpu_backend.h) only hands work off.
  auto* fn = static_cast<HostFunc*>(data);
  (*fn)();
  delete fn;
}

class CudaBackend final : public GpuBackend {
 public:
  CudaBackend(int device, std::string name) : device_(device), name_(std::move(name)) {}

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string_view name() const override { return name_; }
  int device() const override { return device_; }

  Result<DevicePtr> Alloc(size_t bytes) override {
    if (bytes == 0) return Status::InvalidArgument("Alloc of 0 bytes");
    AUXSTORE_RETURN_IF_ERROR(Bind());
    void* p = nullptr;
    AUXSTORE_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&p, bytes), "cudaMalloc"));
    allocs_.Insert(reinterpret_cast<DevicePtr>(p), bytes);
    return reinterpret_cast<DevicePtr>(p);
  }

  Status Free(DevicePtr ptr) override {
    if (ptr == kNullDevicePtr) return Status::Ok();
    AUXSTORE_RETURN_IF_ERROR(allocs_.Erase(ptr).status());
    AUXSTORE_RETURN_IF_ERROR(Bind());
    return CudaStatus(cudaFree(reinterpret_cast<void*>(ptr)), "cudaFree");
  }

  Result<uint8_t*> AllocPinned(size_t bytes) override {
    if (bytes == 0) return Status::InvalidArgument("AllocPinned of 0 bytes");
    AUXSTORE_RETURN_IF_ERROR(Bind());
    void* p = nullptr;
    AUXSTORE_RETURN_IF_ERROR(
        CudaStatus(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc"));
    return static_cast<uint8_t*>(p);
  }

  Status FreePinned(uint8_t* ptr) override {
    if (ptr == nullptr) return Status::Ok();
    return CudaStatus(cudaFreeHost(ptr), "cudaFreeHost");
  }

  Result<StreamHandle> CreateStream() override {
    AUXSTORE_RETURN_IF_ERROR(Bind());
    cudaStream_t s = nullptr;
    AUXSTORE_RETURN_IF_ERROR(
        CudaStatus(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"));
    return reinterpret_cast<StreamHandle>(s);
  }

  Status DestroyStream(StreamHandle stream) override {
    if (stream == kDefaultStream) return Status::InvalidArgument("the default stream is permanent");
    AUXSTORE_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(ToStream(stream)), "sync"));
    return CudaStatus(cudaStreamDestroy(ToStream(stream)), "cudaStreamDestroy");
  }

  Status Synchronize(StreamHandle stream) override {
    return CudaStatus(cudaStreamSynchronize(ToStream(stream)), "cudaStreamSynchronize");
  }

  Result<EventHandle> CreateEvent() override {
    AUXSTORE_RETURN_IF_ERROR(Bind());
    cudaEvent_t e = nullptr;
    AUXSTORE_RETURN_IF_ERROR(
        CudaStatus(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
    return reinterpret_cast<EventHandle>(e);
  }

  Status DestroyEvent(EventHandle event) override {
    return CudaStatus(cudaEventDestroy(ToEvent(event)), "cudaEventDestroy");
  }

  Status RecordEvent(EventHandle event, StreamHandle stream) override {
    return CudaStatus(cudaEventRecord(ToEvent(event), ToStream(stream)), "cudaEventRecord");
  }

  Result<bool> QueryEvent(EventHandle event) override {
    const cudaError_t err = cudaEventQuery(ToEvent(event));
    if (err == cudaErrorNotReady) return false;
    AUXSTORE_RETURN_IF_ERROR(CudaStatus(err, "cudaEventQuery"));
    return true;
  }

  Status StreamWaitEvent(StreamHandle stream, EventHandle event) override {
    return CudaStatus(cudaStreamWaitEvent(ToStream(stream), ToEvent(event), 0),
                      "cudaStreamWaitEvent");
  }

  Status SynchronizeEvent(EventHandle event) override {
    return CudaStatus(cudaEventSynchronize(ToEvent(event)), "cudaEventSynchronize");
  }

  Status LaunchHostFunc(StreamHandle stream, HostFunc fn) override {
    if (!fn) return Status::InvalidArgument("LaunchHostFunc: empty callback");
    auto* heap = new HostFunc(std::move(fn));
    const cudaError_t err = cudaLaunchHostFunc(ToStream(stream), RunHostFunc, heap);
    if (err != cudaSuccess) delete heap;
    return CudaStatus(err, "cudaLaunchHostFunc");
  }

  Status CopyH2DAsync(std::span<const uint8_t> src, DevicePtr dst, uint64_t dst_offset,
                      StreamHandle stream) override {
    if (src.empty()) return Status::Ok();
    AUXSTORE_RETURN_IF_ERROR(CheckRange(dst, dst_offset, src.size()).WithContext("CopyH2DAsync"));
    return CudaStatus(cudaMemcpyAsync(reinterpret_cast<void*>(dst + dst_offset), src.data(),
                                      src.size(), cudaMemcpyHostToDevice, ToStream(stream)),
                      "cudaMemcpyAsync H2D");
  }

  Status CopyD2HAsync(DevicePtr src, uint64_t src_offset, std::span<uint8_t> dst,
                      StreamHandle stream) override {
    if (dst.empty()) return Status::Ok();
    AUXSTORE_RETURN_IF_ERROR(CheckRange(src, src_offset, dst.size()).WithContext("CopyD2H"));
    return CudaStatus(cudaMemcpyAsync(dst.data(), reinterpret_cast<const void*>(src + src_offset),
                                      dst.size(), cudaMemcpyDeviceToHost, ToStream(stream)),
                      "cudaMemcpyAsync D2H");
  }

  Status CopyD2HOnStream(DevicePtr src, uint64_t src_offset, std::span<uint8_t> dst,
                         StreamHandle stream) override {
    AUXSTORE_RETURN_IF_ERROR(CopyD2HAsync(src, src_offset, dst, stream));
    return Synchronize(stream);
  }

  Status QsaBlockPool(const QsaBlockPoolArgs& a, StreamHandle stream) override {
    AUXSTORE_ASSIGN_OR_RETURN(QsaBlockPoolExtents ext, CheckQsaBlockPoolArgs(a));
    AUXSTORE_RETURN_IF_ERROR(CheckRange(a.raw_keys, 0, ext.raw_key_bytes).WithContext("raw_keys"));
    AUXSTORE_RETURN_IF_ERROR(
        CheckRange(a.block_keys, 0, ext.block_key_bytes).WithContext("block_keys"));
    AUXSTORE_RETURN_IF_ERROR(CheckRange(a.k_pool_k, 0, ext.vector_bytes).WithContext("k_pool_k"));
    AUXSTORE_RETURN_IF_ERROR(CheckRange(a.k_norm_w, 0, ext.vector_bytes).WithContext("k_norm_w"));
    if (QsaBlockPoolSharedBytes(a.ratio, a.hd) > 48 * 1024) {
      return Status::NotSupported("qsa_block_pool: ratio + hd too large for one thread block");
    }
    AUXSTORE_RETURN_IF_ERROR(Bind());
    const QsaKernelParams params{reinterpret_cast<const void*>(a.raw_keys),
                                 reinterpret_cast<const void*>(a.k_pool_k),
                                 reinterpret_cast<const void*>(a.k_norm_w),
                                 reinterpret_cast<void*>(a.block_keys),
                                 a.start,
                                 a.n,
                                 a.ratio,
                                 a.hd,
                                 a.rot,
                                 a.theta,
                                 a.eps};
    return CudaStatus(static_cast<cudaError_t>(LaunchQsaBlockPoolKernel(params, ToStream(stream))),
                      "qsa_block_pool launch");
  }

  // A borrowed buffer: device memory of this device (the runtime's
  // pointer attributes), and the range inside one allocation (the driver's
  // cuMemGetAddressRange, reached through cudaGetDriverEntryPointByVersion
  // so libcuda need not be linked).
  Status CheckDeviceRange(DevicePtr ptr, uint64_t bytes) const override {
    if (ptr == kNullDevicePtr) return Status::InvalidArgument("device pointer is null");
    cudaPointerAttributes attr{};
    const cudaError_t err = cudaPointerGetAttributes(&attr, reinterpret_cast<const void*>(ptr));
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear it
      return Status::InvalidArgument(std::string("the CUDA runtime does not know the pointer: ") +
                                     cudaGetErrorName(err));
    }
    if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
      return Status::InvalidArgument(
          "the pointer is not device memory (host, pinned host or unregistered memory)");
    }
    if (attr.device != device_) {
      return Status::InvalidArgument("the pointer is memory of CUDA device " +
                                     std::to_string(attr.device) + ", the backend's is " +
                                     std::to_string(device_));
    }
    using GetRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess || fn == nullptr) {
      cudaGetLastError();
      return Status::Internal("cuMemGetAddressRange is not available from the CUDA driver");
    }
    CUdeviceptr base = 0;
    size_t size = 0;
    if (reinterpret_cast<GetRange>(fn)(&base, &size, static_cast<CUdeviceptr>(ptr)) !=
        CUDA_SUCCESS) {
      return Status::InvalidArgument("the pointer is not inside a CUDA allocation");
    }
    const uint64_t rel = ptr - base;
    if (rel > size || bytes > size - rel) {
      return Status::InvalidArgument("[+" + std::to_string(rel) + ", +" + std::to_string(rel) +
                                     " + " + std::to_string(bytes) + ") exceeds its " +
                                     std::to_string(size) + "-byte allocation");
    }
    return Status::Ok();
  }

 private:
  Status Bind() { return CudaStatus(cudaSetDevice(device_), "cudaSetDevice"); }

  // Bounds-checks pointers this backend allocated; memory the engine
  // allocated itself is not known here and is trusted.
  Status CheckRange(DevicePtr ptr, uint64_t offset, uint64_t bytes) const {
    Status st = allocs_.Check(ptr, offset, bytes);
    if (st.code() == StatusCode::kInvalidArgument && ptr != kNullDevicePtr) return Status::Ok();
    return st;
  }

  const int device_;
  const std::string name_;
  AllocationTable allocs_;
};

}  // namespace

Result<std::unique_ptr<GpuBackend>> CreateCudaBackend(int device) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear it: the runtime stays usable for a later try
    return Status::Unavailable(std::string("no CUDA device: ") + cudaGetErrorString(err));
  }
  if (count == 0) return Status::Unavailable("no CUDA device: the runtime sees 0 devices");
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) device = 0;
  if (device >= count) {
    return Status::InvalidArgument("CUDA device " + std::to_string(device) + " does not exist (" +
                                   std::to_string(count) + " present)");
  }
  cudaDeviceProp prop{};
  AUXSTORE_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, device), "device props"));
  return std::unique_ptr<GpuBackend>(
      new CudaBackend(device, "cuda:" + std::to_string(device) + ":" + prop.name));
}

}  // namespace auxstore::gpu
