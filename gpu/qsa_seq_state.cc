// QsaSeqState: the QSA indexer carry and its snapshot/restore (seed 000).
#include <algorithm>
#include <string>

#include "auxstore/seq_state.h"
#include "format/byte_order.h"
#include "gpu/device_buffers.h"

namespace auxstore {

namespace {

Status CheckLayer(const QsaLayer& layer) {
  const QsaGeometry& g = layer.geometry;
  if (g.hd == 0 || g.max_tokens == 0 || g.ratio == 0 || g.rot % 2 != 0 || g.rot > g.hd) {
    return Status::InvalidArgument(
        "QSA state: geometry needs hd, max_tokens, ratio > 0 and an "
        "even rot <= hd");
  }
  if (layer.k_pool_k == kNullDevicePtr || layer.k_norm_w == kNullDevicePtr) {
    return Status::InvalidArgument("QSA state: the layer's k_pool_k and k_norm_w are required");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<QsaSeqState>> QsaSeqState::Borrow(GpuBackend& gpu, const QsaLayer& layer,
                                                         const Buffers& b, uint64_t ingested,
                                                         uint64_t pooled) {
  AUXSTORE_RETURN_IF_ERROR(CheckLayer(layer));
  const QsaGeometry& g = layer.geometry;
  const uint64_t row = uint64_t{g.hd} * 2;
  AUXSTORE_RETURN_IF_ERROR(gpu::CheckBorrowed(gpu, "QSA state", "raw_keys", b.raw_keys,
                                              b.raw_keys_bytes, g.max_tokens, row));
  AUXSTORE_RETURN_IF_ERROR(gpu::CheckBorrowed(gpu, "QSA state", "block_keys", b.block_keys,
                                              b.block_keys_bytes, g.max_tokens / g.ratio, row));
  AUXSTORE_RETURN_IF_ERROR(
      gpu::CheckBorrowed(gpu, "QSA state", "k_pool_k", layer.k_pool_k, row, 1, row));
  AUXSTORE_RETURN_IF_ERROR(
      gpu::CheckBorrowed(gpu, "QSA state", "k_norm_w", layer.k_norm_w, row, 1, row));
  std::unique_ptr<QsaSeqState> st(new QsaSeqState(gpu, layer));
  st->owned_ = false;
  st->raw_keys_ = b.raw_keys;
  st->block_keys_ = g.max_tokens / g.ratio > 0 ? b.block_keys : kNullDevicePtr;
  AUXSTORE_RETURN_IF_ERROR(st->SetCounters(ingested, pooled));
  return st;
}

Result<std::unique_ptr<QsaSeqState>> QsaSeqState::Create(GpuBackend& gpu, const QsaLayer& layer) {
  AUXSTORE_RETURN_IF_ERROR(CheckLayer(layer));
  const QsaGeometry& g = layer.geometry;
  std::unique_ptr<QsaSeqState> st(new QsaSeqState(gpu, layer));
  AUXSTORE_ASSIGN_OR_RETURN(st->raw_keys_, gpu::AllocRows(gpu, g.max_tokens, uint64_t{g.hd} * 2));
  if (const uint64_t blocks = g.max_tokens / g.ratio; blocks > 0) {
    // On failure the destructor frees raw_keys_.
    AUXSTORE_ASSIGN_OR_RETURN(st->block_keys_, gpu::AllocRows(gpu, blocks, uint64_t{g.hd} * 2));
  }
  return st;
}

QsaSeqState::~QsaSeqState() { (void)Release(); }

Status QsaSeqState::Release() {
  return gpu::ReleaseBuffers(*gpu_, owned_, {&raw_keys_, &block_keys_});
}

Status QsaSeqState::SetCounters(uint64_t ingested, uint64_t pooled) {
  const QsaGeometry& g = layer_.geometry;
  if (ingested > g.max_tokens || pooled > ingested / g.ratio) {
    return Status::OutOfRange("QSA state: counters ingested " + std::to_string(ingested) +
                              ", pooled " + std::to_string(pooled) + " do not fit the geometry");
  }
  ingested_ = ingested;
  pooled_ = pooled;
  return Status::Ok();
}

Result<RestorePlan> QsaSeqState::PlanRestore(ByteSpan head, uint64_t blob_size) const {
  if (raw_keys_ == kNullDevicePtr) return Status::Unavailable("QSA state was released");
  AUXSTORE_ASSIGN_OR_RETURN(QsaHeader h, CheckQsaBlob(head, blob_size, layer_.geometry));
  RestorePlan plan{.blob_bytes = blob_size, .count = h.ingested, .pooled = h.pooled};
  if (h.raw_key_bytes > 0) {
    plan.segments.push_back({kQsaHeaderBytes, h.raw_key_bytes, raw_keys_, 0});
  }
  return plan;
}

Result<RestorePlan> QsaSeqState::PlanRestoreRows(ByteSpan head, uint64_t blob_size, uint64_t first,
                                                 uint64_t last) const {
  AUXSTORE_ASSIGN_OR_RETURN(RestorePlan plan, PlanRestore(head, blob_size));
  AUXSTORE_RETURN_IF_ERROR(CutToRows(&plan, ingested_, first, last));
  // Blocks complete by `last` and pooled in the snapshot; those the state
  // pooled already stay (their raw rows are the state's own).
  const uint64_t ratio = layer_.geometry.ratio;
  plan.pooled = std::max(pooled_, std::min(plan.pooled, ratio > 0 ? last / ratio : 0));
  plan.pool_start = pooled_;
  return plan;
}

Status QsaSeqState::FinishRestore(const RestorePlan& plan, StreamHandle stream) {
  if (plan.pooled <= plan.pool_start) return Status::Ok();
  const QsaGeometry& g = layer_.geometry;
  // Block keys are not stored: one launch re-pools them from the raw keys.
  const QsaBlockPoolArgs args{.raw_keys = raw_keys_,
                              .k_pool_k = layer_.k_pool_k,
                              .k_norm_w = layer_.k_norm_w,
                              .block_keys = block_keys_,
                              .ingested = plan.count,
                              .start = static_cast<uint32_t>(plan.pool_start),
                              .n = static_cast<uint32_t>(plan.pooled - plan.pool_start),
                              .ratio = g.ratio,
                              .hd = g.hd,
                              .rot = g.rot,
                              .theta = g.theta,
                              .eps = g.eps};
  return gpu_->QsaBlockPool(args, stream).WithContext("QSA re-pool");
}

void QsaSeqState::CommitRestore(const RestorePlan& plan) {
  ingested_ = plan.count;
  pooled_ = plan.pooled;  // > 0 only when FinishRestore issued the re-pool
}

Result<SnapshotPlan> QsaSeqState::PlanSnapshot() const {
  if (raw_keys_ == kNullDevicePtr) return Status::Unavailable("QSA state was released");
  SnapshotPlan plan;
  const uint64_t raw_bytes = ingested_ * layer_.geometry.hd * 2;  // <= the allocation
  plan.blob_bytes = kQsaHeaderBytes + raw_bytes;
  plan.header.resize(kQsaHeaderBytes);
  internal::PutLE64(plan.header.data(), ingested_);
  internal::PutLE64(plan.header.data() + 8, pooled_);
  // The header must be what the codec accepts back.
  AUXSTORE_RETURN_IF_ERROR(CheckQsaBlob(plan.header, plan.blob_bytes, layer_.geometry).status());
  if (raw_bytes > 0) plan.segments.push_back({kQsaHeaderBytes, raw_bytes, raw_keys_, 0});
  return plan;
}

Result<std::vector<uint8_t>> QsaSeqState::Snapshot(StreamHandle stream) const {
  if (raw_keys_ == kNullDevicePtr) return Status::Unavailable("QSA state was released");
  std::vector<uint8_t> raw(ingested_ * layer_.geometry.hd * 2);
  AUXSTORE_RETURN_IF_ERROR(gpu_->CopyD2HOnStream(raw_keys_, 0, raw, stream));
  return EncodeQsaBlob(ingested_, pooled_, raw, layer_.geometry.hd);
}

}  // namespace auxstore
