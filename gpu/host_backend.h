// The host backend: a CPU "device" with real asynchrony. Device and pinned
// memory are aligned host memory, resident from Alloc on (as on a GPU), each
// stream is a HostStream, events and host callbacks follow stream order, and
// qsa_block_pool runs the CPU reference.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "auxstore/gpu_backend.h"
#include "gpu/allocation_table.h"
#include "gpu/host_stream.h"
#include "gpu/resident_heap.h"

namespace auxstore::gpu {

struct HostBackendOptions {
  // Every stream operation sleeps this long first (tests: copies run late).
  std::chrono::microseconds op_delay{0};
};

class HostBackend final : public GpuBackend {
 public:
  explicit HostBackend(HostBackendOptions options = {});
  ~HostBackend() override;

  BackendKind kind() const override { return BackendKind::kHost; }
  std::string_view name() const override { return "host"; }
  int device() const override { return 0; }

  Result<DevicePtr> Alloc(size_t bytes) override;
  Status Free(DevicePtr ptr) override;
  Result<uint8_t*> AllocPinned(size_t bytes) override;
  Status FreePinned(uint8_t* ptr) override;

  Result<StreamHandle> CreateStream() override;
  Status DestroyStream(StreamHandle stream) override;
  Status Synchronize(StreamHandle stream) override;

  Result<EventHandle> CreateEvent() override;
  Status DestroyEvent(EventHandle event) override;
  Status RecordEvent(EventHandle event, StreamHandle stream) override;
  Result<bool> QueryEvent(EventHandle event) override;
  Status StreamWaitEvent(StreamHandle stream, EventHandle event) override;
  Status SynchronizeEvent(EventHandle event) override;
  Status LaunchHostFunc(StreamHandle stream, HostFunc fn) override;

  Status CopyH2DAsync(std::span<const uint8_t> src, DevicePtr dst, uint64_t dst_offset,
                      StreamHandle stream) override;
  Status CopyD2HAsync(DevicePtr src, uint64_t src_offset, std::span<uint8_t> dst,
                      StreamHandle stream) override;
  Status CopyD2HOnStream(DevicePtr src, uint64_t src_offset, std::span<uint8_t> dst,
                         StreamHandle stream) override;

  Status QsaBlockPool(const QsaBlockPoolArgs& args, StreamHandle stream) override;
  Status CheckDeviceRange(DevicePtr ptr, uint64_t bytes) const override;

  // ---- test hooks ----
  Status SetStreamDelay(StreamHandle stream, std::chrono::microseconds delay);
  // FreePinned calls on a buffer a pending copy still used.
  uint64_t pinned_misuse_count() const;
  size_t live_allocations() const { return allocs_.size(); }
  size_t live_pinned() const;

 private:
  struct Event;
  struct Pinned {
    size_t bytes = 0;
    uint64_t in_flight = 0;  // pending copies touching it
    bool free_deferred = false;
  };

  Result<std::shared_ptr<HostStream>> GetStream(StreamHandle stream) const;
  Result<std::shared_ptr<Event>> GetEvent(EventHandle event) const;
  void SynchronizeAll();
  // Marks the pinned buffer holding [p, p+n), if any, as used by a copy; the
  // returned function ends that use.
  std::function<void()> PinUse(const uint8_t* p, size_t n);

  const HostBackendOptions options_;
  // Declared before everything that holds its blocks, so it is destroyed last.
  ResidentHeap heap_;
  AllocationTable allocs_;
  mutable std::mutex mu_;
  std::map<StreamHandle, std::shared_ptr<HostStream>> streams_;
  std::map<EventHandle, std::shared_ptr<Event>> events_;
  std::map<const uint8_t*, Pinned> pinned_;
  uint64_t next_handle_ = 1;
  uint64_t pinned_misuse_ = 0;
};

}  // namespace auxstore::gpu
