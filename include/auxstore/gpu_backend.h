// GpuBackend: the device operations auxstore needs, shaped like the engine's
// backend (seeds 000/001): device and pinned-host memory, in-order streams,
// events, host callbacks, H2D/D2H copies and the `qsa_block_pool` re-pool.
//
// Two implementations: CUDA (built when nvcc is found, used when a device is
// present) and host (a CPU "device": memory is host memory, each stream is an
// in-order executor on its own thread, the kernel is the CPU reference).
//
// Every call returns a Status or Result; no exception crosses this API.
// Asynchronous work is validated when it is enqueued (bounds, arguments); a
// failure that can only surface later makes the stream's next Synchronize
// return it (sticky, like CUDA).
//
// Thread safety: every method may be called from any thread. Work enqueued on
// one stream runs in enqueue order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "auxstore/status.h"

namespace auxstore {

// Opaque device address. 0 is null. Device memory is addressed as (base,
// byte offset) where base is a pointer Alloc returned.
using DevicePtr = uintptr_t;
inline constexpr DevicePtr kNullDevicePtr = 0;

// Opaque stream / event handles. Stream 0 is the backend's default stream
// (CUDA's legacy default stream). On the CUDA backend a StreamHandle is the
// cudaStream_t itself and an EventHandle the cudaEvent_t: an engine passes
// its own streams as they are, and may wait on auxstore's events.
using StreamHandle = uint64_t;
using EventHandle = uint64_t;
inline constexpr StreamHandle kDefaultStream = 0;

enum class BackendKind : uint8_t { kAuto = 0, kHost = 1, kCuda = 2 };
std::string_view BackendKindName(BackendKind kind);

// One `qsa_block_pool` launch (design.md section 2): re-pools blocks
// [start, start+n) of `raw_keys` into `block_keys`. Every buffer is bf16.
struct QsaBlockPoolArgs {
  DevicePtr raw_keys = kNullDevicePtr;    // [max_tokens][hd]
  DevicePtr k_pool_k = kNullDevicePtr;    // [hd], the pooling query
  DevicePtr k_norm_w = kNullDevicePtr;    // [hd], RMSNorm weight
  DevicePtr block_keys = kNullDevicePtr;  // [max_tokens / ratio][hd]
  uint64_t ingested = 0;                  // raw-key rows that hold data
  uint32_t start = 0;                     // first block
  uint32_t n = 0;                         // blocks to pool (> 0)
  uint32_t ratio = 0;                     // tokens per block (> 0)
  uint32_t hd = 0;                        // head dim (> 0)
  uint32_t rot = 0;                       // RoPE'd dims: even, <= hd (0 = none)
  float theta = 0.0f;                     // RoPE base (> 0 when rot > 0)
  float eps = 0.0f;                       // RMSNorm epsilon (>= 0)
};

// A host callback run after everything enqueued before it on a stream. It
// runs on a backend thread (CUDA's callback thread): it must not call into
// the backend and should only hand work off (e.g. post to an executor).
using HostFunc = std::function<void()>;

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  virtual BackendKind kind() const = 0;
  // "host" or "cuda:<index>:<device name>".
  virtual std::string_view name() const = 0;
  // The device index the backend is bound to (0 on the host backend).
  virtual int device() const = 0;

  // ---- memory ----------------------------------------------------------------
  virtual Result<DevicePtr> Alloc(size_t bytes) = 0;
  // Frees a pointer Alloc returned. Null is a no-op. Waits for the device to
  // stop using it (cudaFree semantics).
  virtual Status Free(DevicePtr ptr) = 0;
  // Page-locked host memory for staging (plain aligned memory on host).
  virtual Result<uint8_t*> AllocPinned(size_t bytes) = 0;
  // Null is a no-op. Freeing a buffer a pending copy still reads is a bug the
  // host backend reports (error; the free is deferred until the copy ends).
  virtual Status FreePinned(uint8_t* ptr) = 0;

  // ---- streams and events ----------------------------------------------------
  virtual Result<StreamHandle> CreateStream() = 0;
  virtual Status DestroyStream(StreamHandle stream) = 0;  // waits for its work
  // Waits for all work enqueued so far; returns the stream's sticky error.
  virtual Status Synchronize(StreamHandle stream) = 0;

  virtual Result<EventHandle> CreateEvent() = 0;
  virtual Status DestroyEvent(EventHandle event) = 0;
  virtual Status RecordEvent(EventHandle event, StreamHandle stream) = 0;
  // True once the work captured by the last RecordEvent has completed (true
  // for a never-recorded event).
  virtual Result<bool> QueryEvent(EventHandle event) = 0;
  // Later work on `stream` waits for the event's captured work.
  virtual Status StreamWaitEvent(StreamHandle stream, EventHandle event) = 0;
  virtual Status SynchronizeEvent(EventHandle event) = 0;

  // Enqueues `fn` on `stream`; see HostFunc.
  virtual Status LaunchHostFunc(StreamHandle stream, HostFunc fn) = 0;

  // ---- copies ----------------------------------------------------------------
  // Copies `src` to dst+dst_offset asynchronously. `src` must stay valid and
  // unchanged until the copy completes (an event or host callback after it);
  // use pinned memory for real asynchrony on CUDA.
  virtual Status CopyH2DAsync(std::span<const uint8_t> src, DevicePtr dst, uint64_t dst_offset,
                              StreamHandle stream) = 0;
  // Copies src+src_offset into `dst` asynchronously (`dst` must stay valid
  // until the copy completes).
  virtual Status CopyD2HAsync(DevicePtr src, uint64_t src_offset, std::span<uint8_t> dst,
                              StreamHandle stream) = 0;
  // Copies src+src_offset into `dst` after the stream's earlier work, and
  // returns once the bytes are in `dst` (the seed's copy_d2h_on_stream).
  virtual Status CopyD2HOnStream(DevicePtr src, uint64_t src_offset, std::span<uint8_t> dst,
                                 StreamHandle stream) = 0;

  // ---- borrowed memory -------------------------------------------------------
  // OK when [ptr, ptr+bytes) is device memory of this backend, inside one
  // allocation: what an engine-owned (borrowed) buffer must be before a
  // state uses it. InvalidArgument naming what is wrong otherwise (a host
  // pointer, another device, a range past its allocation's end). The host
  // backend checks its own allocations; CUDA asks the runtime
  // (cudaPointerGetAttributes) and the driver (cuMemGetAddressRange).
  virtual Status CheckDeviceRange(DevicePtr ptr, uint64_t bytes) const = 0;

  // ---- kernels ---------------------------------------------------------------
  // Checks the arguments (design.md section 2) and the buffers' bounds, then
  // enqueues the re-pool. A refused launch writes nothing.
  virtual Status QsaBlockPool(const QsaBlockPoolArgs& args, StreamHandle stream) = 0;

 protected:
  GpuBackend() = default;
};

// kAuto: CUDA when it is built and a device is present, else host. kCuda:
// Unavailable when it is not built or no device is present. Ask name() or
// kind() which one you got. `device`: the CUDA device index the backend is
// bound to (every call it makes runs on it); -1 = the calling thread's
// current device. InvalidArgument for an index the runtime does not have.
// The host backend ignores it.
Result<std::unique_ptr<GpuBackend>> CreateBackend(BackendKind kind = BackendKind::kAuto,
                                                  int device = -1);

}  // namespace auxstore
