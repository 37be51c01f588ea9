// Per-sequence aux states on the device, and their snapshot / restore in the
// blob formats of blob_codecs.h (seeds 000, 001, 002).
//
// Restore rules (the seeds' invariants): every check runs before any copy;
// the counters move last, only once every copy (and, for QSA, the re-pool) is
// enqueued; `pooled` stays 0 unless the re-pool was issued. A failed restore
// leaves the counters unchanged.
//
// Ownership: Create allocates a state's buffers on the backend and the state
// frees them. Borrow wraps buffers the engine allocated and owns (its own
// cudaMalloc'd memory on CUDA; memory from GpuBackend::Alloc on the host
// backend): auxstore restores into them and snapshots from them, checks
// every copy against the sizes the engine declared, and never frees them.
//
// Lifetime: a state frees the device buffers it owns in Release()
// (idempotent; a failure on one buffer still frees the others; the first
// error is returned) or, ignoring errors, in its destructor; a borrowed
// state only forgets its buffers. The backend must outlive it.
//
// Thread safety: none; one owner (the engine's sequence, or a restore
// pipeline until its completion) uses a state at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/geometry.h"
#include "auxstore/gpu_backend.h"
#include "auxstore/status.h"

namespace auxstore {

// A contiguous blob range and the device range it maps to.
struct BlobSegment {
  uint64_t blob_offset = 0;
  uint64_t bytes = 0;
  DevicePtr device = kNullDevicePtr;
  uint64_t device_offset = 0;
};

// What a checked blob restores: its size, where its bytes go, and the
// counters to set when the restore commits.
struct RestorePlan {
  uint64_t blob_bytes = 0;
  std::vector<BlobSegment> segments;  // ascending, non-overlapping blob ranges
  uint64_t count = 0;                 // QSA ingested / DSA len / opaque bytes
  uint64_t pooled = 0;                // QSA only
  uint64_t pool_start = 0;            // QSA: the first block to re-pool (a row range's)
};

// What a snapshot of the state's current counters holds: the blob header
// (written by the host) and the device ranges that fill the rest.
struct SnapshotPlan {
  uint64_t blob_bytes = 0;
  std::vector<uint8_t> header;
  std::vector<BlobSegment> segments;
};

// A sequence state a snapshot can be taken from and a blob restored into.
class SeqState {
 public:
  virtual ~SeqState() = default;
  SeqState(const SeqState&) = delete;
  SeqState& operator=(const SeqState&) = delete;

  virtual Kind kind() const = 0;
  // True when no row is reachable (counters zero): what a restore targets.
  virtual bool fresh() const = 0;
  // Bytes of a blob's head PlanRestore needs (its header).
  virtual size_t head_bytes() const = 0;

  // Checks a blob from its head and total size against this state, in the
  // seed's order; touches nothing.
  virtual Result<RestorePlan> PlanRestore(ByteSpan head, uint64_t blob_size) const = 0;
  // The same for rows [first, last) of a QSA or DSA blob, into a state that
  // holds exactly rows [0, first) (the engine's own, or an earlier
  // restore's): only those rows' bytes are uploaded, the counters become
  // `last` (QSA: the blocks complete by `last`, up to the blob's pooled
  // count, re-pooled from the first one the state has not pooled).
  // InvalidArgument for an opaque state, a range outside the blob's rows,
  // or a state holding another number of rows; touches nothing.
  virtual Result<RestorePlan> PlanRestoreRows(ByteSpan head, uint64_t blob_size, uint64_t first,
                                              uint64_t last) const;
  // After every segment's copy is enqueued on `stream`: enqueues what must
  // follow (QSA: the re-pool). Visible state does not change.
  virtual Status FinishRestore(const RestorePlan& plan, StreamHandle stream) = 0;
  // Sets the counters from the plan. Call only after FinishRestore succeeded.
  virtual void CommitRestore(const RestorePlan& plan) = 0;

  virtual Result<SnapshotPlan> PlanSnapshot() const = 0;

  // The blob of the current state, D2H on `stream` (after its earlier work).
  virtual Result<std::vector<uint8_t>> Snapshot(StreamHandle stream) const = 0;
  // Restores a whole blob: PlanRestore, the copies, FinishRestore,
  // CommitRestore. `blob` must stay valid until the stream passes the copies.
  Status Restore(ByteSpan blob, StreamHandle stream);

  virtual Status Release() = 0;

  GpuBackend& backend() const { return *gpu_; }
  // False for a state made by Borrow (the engine owns its buffers).
  bool owned() const { return owned_; }

 protected:
  explicit SeqState(GpuBackend& gpu) : gpu_(&gpu) {}
  // A whole-blob plan cut to rows [first, last) of a state holding `rows`
  // (every segment an array of plan.count equal rows); count set to `last`.
  static Status CutToRows(RestorePlan* plan, uint64_t rows, uint64_t first, uint64_t last);

  GpuBackend* gpu_;
  bool owned_ = true;
};

// The layer-owned QSA weights (hd bf16 each), owned by the caller.
struct QsaLayer {
  QsaGeometry geometry;
  DevicePtr k_pool_k = kNullDevicePtr;
  DevicePtr k_norm_w = kNullDevicePtr;
};

// QSA indexer carry (seed 000/002): raw keys [max_tokens][hd] and block keys
// [max_tokens/ratio][hd], bf16; counters ingested and pooled.
class QsaSeqState final : public SeqState {
 public:
  static Result<std::unique_ptr<QsaSeqState>> Create(GpuBackend& gpu, const QsaLayer& layer);

  // Engine-owned buffers of one layer of one sequence.
  struct Buffers {
    DevicePtr raw_keys = kNullDevicePtr;  // >= max_tokens * hd * 2 bytes
    uint64_t raw_keys_bytes = 0;
    DevicePtr block_keys = kNullDevicePtr;  // >= max_tokens / ratio * hd * 2 bytes
    uint64_t block_keys_bytes = 0;
  };
  // `ingested` / `pooled`: the engine's current counters (checked as
  // SetCounters does); a restore needs both 0.
  static Result<std::unique_ptr<QsaSeqState>> Borrow(GpuBackend& gpu, const QsaLayer& layer,
                                                     const Buffers& buffers, uint64_t ingested = 0,
                                                     uint64_t pooled = 0);
  ~QsaSeqState() override;

  Kind kind() const override { return Kind::kQsa; }
  bool fresh() const override { return ingested_ == 0 && pooled_ == 0; }
  size_t head_bytes() const override { return kQsaHeaderBytes; }
  Result<RestorePlan> PlanRestore(ByteSpan head, uint64_t blob_size) const override;
  Result<RestorePlan> PlanRestoreRows(ByteSpan head, uint64_t blob_size, uint64_t first,
                                      uint64_t last) const override;
  Status FinishRestore(const RestorePlan& plan, StreamHandle stream) override;
  void CommitRestore(const RestorePlan& plan) override;
  Result<SnapshotPlan> PlanSnapshot() const override;
  Result<std::vector<uint8_t>> Snapshot(StreamHandle stream) const override;
  Status Release() override;

  // The ingest path reports what it wrote (checked like a blob header).
  Status SetCounters(uint64_t ingested, uint64_t pooled);

  uint64_t ingested() const { return ingested_; }
  uint64_t pooled() const { return pooled_; }
  DevicePtr raw_keys() const { return raw_keys_; }
  DevicePtr block_keys() const { return block_keys_; }
  const QsaLayer& layer() const { return layer_; }

 private:
  QsaSeqState(GpuBackend& gpu, const QsaLayer& layer) : SeqState(gpu), layer_(layer) {}

  QsaLayer layer_;
  DevicePtr raw_keys_ = kNullDevicePtr;
  DevicePtr block_keys_ = kNullDevicePtr;  // null when max_tokens < ratio
  uint64_t ingested_ = 0;
  uint64_t pooled_ = 0;
};

// DSA indexer cache (seed 001): k_normed and gate [capacity][d] bf16, valid
// [capacity] u8; the cursor `len`.
class DsaSeqState final : public SeqState {
 public:
  static Result<std::unique_ptr<DsaSeqState>> Create(GpuBackend& gpu, const DsaGeometry& geo);

  // Engine-owned buffers of one layer of one sequence: `capacity` rows.
  struct Buffers {
    DevicePtr k_normed = kNullDevicePtr;  // >= capacity * index_head_dim * 2 bytes
    uint64_t k_normed_bytes = 0;
    DevicePtr gate = kNullDevicePtr;  // >= capacity * index_head_dim * 2 bytes
    uint64_t gate_bytes = 0;
    DevicePtr valid = kNullDevicePtr;  // >= capacity bytes
    uint64_t valid_bytes = 0;
  };
  // geo.capacity: the rows the engine's buffers hold; `len` its cursor.
  static Result<std::unique_ptr<DsaSeqState>> Borrow(GpuBackend& gpu, const DsaGeometry& geo,
                                                     const Buffers& buffers, uint64_t len = 0);
  ~DsaSeqState() override;

  Kind kind() const override { return Kind::kDsa; }
  bool fresh() const override { return len_ == 0; }
  size_t head_bytes() const override { return kDsaHeaderBytes; }
  Result<RestorePlan> PlanRestore(ByteSpan head, uint64_t blob_size) const override;
  Result<RestorePlan> PlanRestoreRows(ByteSpan head, uint64_t blob_size, uint64_t first,
                                      uint64_t last) const override;
  Status FinishRestore(const RestorePlan& plan, StreamHandle stream) override;
  void CommitRestore(const RestorePlan& plan) override;
  Result<SnapshotPlan> PlanSnapshot() const override;
  Result<std::vector<uint8_t>> Snapshot(StreamHandle stream) const override;
  Status Release() override;

  Status SetLen(uint64_t len);  // OutOfRange beyond capacity

  uint64_t len() const { return len_; }
  uint64_t capacity() const { return geo_.capacity; }
  DevicePtr k_normed() const { return k_normed_; }
  DevicePtr gate() const { return gate_; }
  DevicePtr valid() const { return valid_; }

 private:
  DsaSeqState(GpuBackend& gpu, const DsaGeometry& geo) : SeqState(gpu), geo_(geo) {}

  DsaGeometry geo_;
  DevicePtr k_normed_ = kNullDevicePtr, gate_ = kNullDevicePtr, valid_ = kNullDevicePtr;
  uint64_t len_ = 0;
};

// Any other per-layer state: `size` bytes restored byte-for-byte into a
// device buffer of `capacity` bytes.
class OpaqueSeqState final : public SeqState {
 public:
  static Result<std::unique_ptr<OpaqueSeqState>> Create(GpuBackend& gpu, uint64_t capacity);
  // An engine-owned buffer of `capacity` bytes holding `size` of state.
  static Result<std::unique_ptr<OpaqueSeqState>> Borrow(GpuBackend& gpu, DevicePtr buffer,
                                                        uint64_t capacity, uint64_t size = 0);
  ~OpaqueSeqState() override;

  Kind kind() const override { return Kind::kOpaque; }
  bool fresh() const override { return size_ == 0; }
  size_t head_bytes() const override { return 0; }
  Result<RestorePlan> PlanRestore(ByteSpan head, uint64_t blob_size) const override;
  Status FinishRestore(const RestorePlan& plan, StreamHandle stream) override;
  void CommitRestore(const RestorePlan& plan) override;
  Result<SnapshotPlan> PlanSnapshot() const override;
  Result<std::vector<uint8_t>> Snapshot(StreamHandle stream) const override;
  Status Release() override;

  Status SetSize(uint64_t size);  // OutOfRange beyond capacity

  uint64_t size() const { return size_; }
  uint64_t capacity() const { return capacity_; }
  DevicePtr buffer() const { return buffer_; }

 private:
  OpaqueSeqState(GpuBackend& gpu, uint64_t capacity) : SeqState(gpu), capacity_(capacity) {}

  uint64_t capacity_;
  DevicePtr buffer_ = kNullDevicePtr;
  uint64_t size_ = 0;
};

}  // namespace auxstore
