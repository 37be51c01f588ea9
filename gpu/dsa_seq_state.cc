// DsaSeqState: the DSA indexer cache and its snapshot/restore (seed 001).
#include <string>

#include "auxstore/seq_state.h"
#include "format/byte_order.h"
#include "gpu/device_buffers.h"

namespace auxstore {

Result<std::unique_ptr<DsaSeqState>> DsaSeqState::Create(GpuBackend& gpu, const DsaGeometry& geo) {
  if (geo.index_head_dim == 0 || geo.capacity == 0) {
    return Status::InvalidArgument("DSA state: index_head_dim and capacity must be > 0");
  }
  std::unique_ptr<DsaSeqState> st(new DsaSeqState(gpu, geo));
  const uint64_t row = uint64_t{geo.index_head_dim} * 2;
  AUXSTORE_ASSIGN_OR_RETURN(st->k_normed_, gpu::AllocRows(gpu, geo.capacity, row));
  AUXSTORE_ASSIGN_OR_RETURN(st->gate_, gpu::AllocRows(gpu, geo.capacity, row));
  AUXSTORE_ASSIGN_OR_RETURN(st->valid_, gpu::AllocRows(gpu, geo.capacity, 1));
  return st;
}

Result<std::unique_ptr<DsaSeqState>> DsaSeqState::Borrow(GpuBackend& gpu, const DsaGeometry& geo,
                                                         const Buffers& b, uint64_t len) {
  if (geo.index_head_dim == 0 || geo.capacity == 0) {
    return Status::InvalidArgument("DSA state: index_head_dim and capacity must be > 0");
  }
  const uint64_t row = uint64_t{geo.index_head_dim} * 2;
  AUXSTORE_RETURN_IF_ERROR(gpu::CheckBorrowed(gpu, "DSA state", "k_normed", b.k_normed,
                                              b.k_normed_bytes, geo.capacity, row));
  AUXSTORE_RETURN_IF_ERROR(
      gpu::CheckBorrowed(gpu, "DSA state", "gate", b.gate, b.gate_bytes, geo.capacity, row));
  AUXSTORE_RETURN_IF_ERROR(
      gpu::CheckBorrowed(gpu, "DSA state", "valid", b.valid, b.valid_bytes, geo.capacity, 1));
  std::unique_ptr<DsaSeqState> st(new DsaSeqState(gpu, geo));
  st->owned_ = false;
  st->k_normed_ = b.k_normed;
  st->gate_ = b.gate;
  st->valid_ = b.valid;
  AUXSTORE_RETURN_IF_ERROR(st->SetLen(len));
  return st;
}

DsaSeqState::~DsaSeqState() { (void)Release(); }

Status DsaSeqState::Release() {
  return gpu::ReleaseBuffers(*gpu_, owned_, {&k_normed_, &gate_, &valid_});
}

Status DsaSeqState::SetLen(uint64_t len) {
  if (len > geo_.capacity) {
    return Status::OutOfRange("DSA state: len " + std::to_string(len) + " > capacity " +
                              std::to_string(geo_.capacity));
  }
  len_ = len;
  return Status::Ok();
}

Result<RestorePlan> DsaSeqState::PlanRestore(ByteSpan head, uint64_t blob_size) const {
  if (k_normed_ == kNullDevicePtr) return Status::Unavailable("DSA state was released");
  AUXSTORE_ASSIGN_OR_RETURN(DsaLayout l, CheckDsaBlob(head, blob_size, geo_));
  RestorePlan plan{.blob_bytes = blob_size, .count = l.len};
  if (l.len > 0) {
    plan.segments = {{l.k_normed_offset, l.key_bytes, k_normed_, 0},
                     {l.gate_offset, l.key_bytes, gate_, 0},
                     {l.valid_offset, l.len, valid_, 0}};
  }
  return plan;
}

Result<RestorePlan> DsaSeqState::PlanRestoreRows(ByteSpan head, uint64_t blob_size, uint64_t first,
                                                 uint64_t last) const {
  AUXSTORE_ASSIGN_OR_RETURN(RestorePlan plan, PlanRestore(head, blob_size));
  AUXSTORE_RETURN_IF_ERROR(CutToRows(&plan, len_, first, last));
  return plan;
}

Status DsaSeqState::FinishRestore(const RestorePlan&, StreamHandle) { return Status::Ok(); }

void DsaSeqState::CommitRestore(const RestorePlan& plan) { len_ = plan.count; }

Result<SnapshotPlan> DsaSeqState::PlanSnapshot() const {
  if (k_normed_ == kNullDevicePtr) return Status::Unavailable("DSA state was released");
  AUXSTORE_ASSIGN_OR_RETURN(DsaLayout l, DsaBlobLayout(len_, geo_.index_head_dim));
  SnapshotPlan plan{.blob_bytes = l.total_bytes};
  plan.header.resize(kDsaHeaderBytes);
  internal::PutLE64(plan.header.data(), l.len);
  internal::PutLE64(plan.header.data() + 8, l.index_head_dim);
  AUXSTORE_RETURN_IF_ERROR(CheckDsaBlob(plan.header, plan.blob_bytes, geo_).status());
  if (l.len > 0) {
    plan.segments = {{l.k_normed_offset, l.key_bytes, k_normed_, 0},
                     {l.gate_offset, l.key_bytes, gate_, 0},
                     {l.valid_offset, l.len, valid_, 0}};
  }
  return plan;
}

Result<std::vector<uint8_t>> DsaSeqState::Snapshot(StreamHandle stream) const {
  if (k_normed_ == kNullDevicePtr) return Status::Unavailable("DSA state was released");
  AUXSTORE_ASSIGN_OR_RETURN(DsaLayout l, DsaBlobLayout(len_, geo_.index_head_dim));
  std::vector<uint8_t> k(l.key_bytes), g(l.key_bytes), v(l.len);
  AUXSTORE_RETURN_IF_ERROR(gpu_->CopyD2HAsync(k_normed_, 0, k, stream));
  AUXSTORE_RETURN_IF_ERROR(gpu_->CopyD2HAsync(gate_, 0, g, stream));
  AUXSTORE_RETURN_IF_ERROR(gpu_->CopyD2HOnStream(valid_, 0, v, stream));
  return EncodeDsaBlob(len_, geo_.index_head_dim, k, g, v);
}

}  // namespace auxstore
