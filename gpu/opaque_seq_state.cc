// OpaqueSeqState: bytes restored byte-for-byte, no interpretation.
#include <string>

#include "auxstore/seq_state.h"
#include "gpu/device_buffers.h"

namespace auxstore {

Result<std::unique_ptr<OpaqueSeqState>> OpaqueSeqState::Create(GpuBackend& gpu, uint64_t capacity) {
  if (capacity == 0) return Status::InvalidArgument("opaque state: capacity must be > 0");
  std::unique_ptr<OpaqueSeqState> st(new OpaqueSeqState(gpu, capacity));
  AUXSTORE_ASSIGN_OR_RETURN(st->buffer_, gpu::AllocRows(gpu, capacity, 1));
  return st;
}

Result<std::unique_ptr<OpaqueSeqState>> OpaqueSeqState::Borrow(GpuBackend& gpu, DevicePtr buffer,
                                                               uint64_t capacity, uint64_t size) {
  if (capacity == 0) return Status::InvalidArgument("opaque state: capacity must be > 0");
  AUXSTORE_RETURN_IF_ERROR(
      gpu::CheckBorrowed(gpu, "opaque state", "buffer", buffer, capacity, capacity, 1));
  std::unique_ptr<OpaqueSeqState> st(new OpaqueSeqState(gpu, capacity));
  st->owned_ = false;
  st->buffer_ = buffer;
  AUXSTORE_RETURN_IF_ERROR(st->SetSize(size));
  return st;
}

OpaqueSeqState::~OpaqueSeqState() { (void)Release(); }

Status OpaqueSeqState::Release() { return gpu::ReleaseBuffers(*gpu_, owned_, {&buffer_}); }

Status OpaqueSeqState::SetSize(uint64_t size) {
  if (size > capacity_) return Status::OutOfRange("opaque state: size beyond capacity");
  size_ = size;
  return Status::Ok();
}

Result<RestorePlan> OpaqueSeqState::PlanRestore(ByteSpan, uint64_t blob_size) const {
  if (buffer_ == kNullDevicePtr) return Status::Unavailable("opaque state was released");
  if (blob_size > capacity_) {
    return Status::OutOfRange("opaque blob of " + std::to_string(blob_size) +
                              " bytes exceeds the state's " + std::to_string(capacity_));
  }
  RestorePlan plan{.blob_bytes = blob_size, .count = blob_size};
  if (blob_size > 0) plan.segments.push_back({0, blob_size, buffer_, 0});
  return plan;
}

Status OpaqueSeqState::FinishRestore(const RestorePlan&, StreamHandle) { return Status::Ok(); }

void OpaqueSeqState::CommitRestore(const RestorePlan& plan) { size_ = plan.count; }

Result<SnapshotPlan> OpaqueSeqState::PlanSnapshot() const {
  if (buffer_ == kNullDevicePtr) return Status::Unavailable("opaque state was released");
  SnapshotPlan plan{.blob_bytes = size_};
  if (size_ > 0) plan.segments.push_back({0, size_, buffer_, 0});
  return plan;
}

Result<std::vector<uint8_t>> OpaqueSeqState::Snapshot(StreamHandle stream) const {
  if (buffer_ == kNullDevicePtr) return Status::Unavailable("opaque state was released");
  std::vector<uint8_t> out(size_);
  AUXSTORE_RETURN_IF_ERROR(gpu_->CopyD2HOnStream(buffer_, 0, out, stream));
  return out;
}

}  // namespace auxstore
