// A GpuBackend that forwards to a real one and fails chosen calls, for
// failure-path tests.
#pragma once

#include <atomic>
#include <set>

#include "auxstore/gpu_backend.h"

namespace auxstore::testing {

class FaultyBackend final : public GpuBackend {
 public:
  explicit FaultyBackend(GpuBackend& inner) : in_(inner) {}

  // The n-th (0-based) CopyH2DAsync from now fails; -1 = never.
  std::atomic<int> fail_h2d_at{-1};
  std::atomic<bool> fail_pool{false};
  // Copies enqueued, and those the stream has completed.
  std::atomic<int> h2d_enqueued{0}, h2d_done{0};
  std::atomic<bool> fail_host_func{false};
  std::set<DevicePtr> fail_free;  // Free of these fails (and really frees nothing)
  std::atomic<int> h2d_calls{0}, free_calls{0};
  std::atomic<uint64_t> h2d_bytes{0};  // bytes of the copies enqueued

  BackendKind kind() const override { return in_.kind(); }
  std::string_view name() const override { return "faulty"; }
  int device() const override { return in_.device(); }
  Result<DevicePtr> Alloc(size_t b) override { return in_.Alloc(b); }
  Status Free(DevicePtr p) override {
    ++free_calls;
    if (fail_free.count(p)) return Status::Internal("injected Free failure");
    return in_.Free(p);
  }
  Result<uint8_t*> AllocPinned(size_t b) override { return in_.AllocPinned(b); }
  Status FreePinned(uint8_t* p) override { return in_.FreePinned(p); }
  Result<StreamHandle> CreateStream() override { return in_.CreateStream(); }
  Status DestroyStream(StreamHandle s) override { return in_.DestroyStream(s); }
  Status Synchronize(StreamHandle s) override { return in_.Synchronize(s); }
  Result<EventHandle> CreateEvent() override { return in_.CreateEvent(); }
  Status DestroyEvent(EventHandle e) override { return in_.DestroyEvent(e); }
  Status RecordEvent(EventHandle e, StreamHandle s) override { return in_.RecordEvent(e, s); }
  Result<bool> QueryEvent(EventHandle e) override { return in_.QueryEvent(e); }
  Status StreamWaitEvent(StreamHandle s, EventHandle e) override {
    return in_.StreamWaitEvent(s, e);
  }
  Status SynchronizeEvent(EventHandle e) override { return in_.SynchronizeEvent(e); }
  Status LaunchHostFunc(StreamHandle s, HostFunc fn) override {
    if (fail_host_func) return Status::Internal("injected LaunchHostFunc failure");
    return in_.LaunchHostFunc(s, std::move(fn));
  }
  Status CopyH2DAsync(std::span<const uint8_t> src, DevicePtr dst, uint64_t off,
                      StreamHandle s) override {
    if (h2d_calls++ == fail_h2d_at) return Status::Internal("injected H2D failure");
    AUXSTORE_RETURN_IF_ERROR(in_.CopyH2DAsync(src, dst, off, s));
    ++h2d_enqueued;
    h2d_bytes += src.size();
    return in_.LaunchHostFunc(s, [this] { ++h2d_done; });  // runs once the copy has
  }
  Status CopyD2HAsync(DevicePtr src, uint64_t off, std::span<uint8_t> dst,
                      StreamHandle s) override {
    return in_.CopyD2HAsync(src, off, dst, s);
  }
  Status CopyD2HOnStream(DevicePtr src, uint64_t off, std::span<uint8_t> dst,
                         StreamHandle s) override {
    return in_.CopyD2HOnStream(src, off, dst, s);
  }
  Status CheckDeviceRange(DevicePtr p, uint64_t bytes) const override {
    return in_.CheckDeviceRange(p, bytes);
  }
  Status QsaBlockPool(const QsaBlockPoolArgs& a, StreamHandle s) override {
    if (fail_pool) return Status::Internal("injected qsa_block_pool failure");
    return in_.QsaBlockPool(a, s);
  }

 private:
  GpuBackend& in_;
};

}  // namespace auxstore::testing
