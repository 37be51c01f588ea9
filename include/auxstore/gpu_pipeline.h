// GpuPipeline: restore snapshots from a Store into device sequence states,
// and take snapshots off the engine's thread (design.md section 4).
//
// Restore: manifest -> every layer's header checked against its target
// before any upload -> chunks read in order per layer, several layers at
// once (Store::ReadChunkInto straight into pinned staging, on an Asio pool;
// envelope check, whole-blob hash and copy in one pass), uploaded with
// CopyH2DAsync; reading chunk k+1 overlaps the upload of chunk k ->
// whole-blob XXH3 compared with the manifest before a layer's last chunk is
// uploaded -> the layer's re-pool (QSA) enqueued -> the layer is complete
// (its event recorded, LayerDone) -> when every layer is: counters
// committed, all layers at once -> completion, once the stream has passed
// the restored work. Any failure: an error and no counter moved; Corruption
// also quarantines the snapshot. Targets must be fresh (or, for a row range,
// hold exactly the rows before it) and untouched until the completion.
//
// Streams: a restore runs on RestoreOptions::stream, or on the pipeline's
// own non-blocking stream — never on the legacy default stream, which would
// serialize against every blocking stream of the engine. The engine learns
// a restore (or one layer of it) is done by a host wait (Wait, WaitLayer), a
// poll (done, LayerDone), a callback, or a device event its own stream can
// wait on (StreamWaitLayer / StreamWaitAll, LayerEvent).
//
// Snapshot: the states' bytes are copied D2H on the stream the engine names
// (ordered after the kernels that wrote them) into a bounded pinned arena; a
// host callback hands the blob to the Asio pool, which writes it
// (Store::PutSnapshot). When the queue or the arena is full the snapshot is
// shed (Capacity) and counted; the engine never blocks.
//
// C++ completion tokens (callback, use_future, awaitables): asio_restore.h.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "auxstore/gpu_backend.h"
#include "auxstore/prefix.h"
#include "auxstore/seq_state.h"
#include "auxstore/status.h"
#include "auxstore/store.h"

namespace auxstore {

struct PipelineOptions {
  // Restore staging: count x bytes of pinned memory, the restore path's
  // memory bound. `staging_bytes` must hold one store chunk.
  size_t staging_buffers = 4;
  size_t staging_bytes = 4u << 20;
  // Restore lanes and I/O threads by default: DefaultRestoreLanes (store.h).
  size_t io_threads = DefaultRestoreLanes();
  // Layers a restore streams at once (>= 1), each by one lane reading its
  // chunks in order; chunk reads in flight per restore are at most this many.
  // Lanes beyond io_threads only queue. Each lane also holds the store's
  // read buffer of the chunk it is copying (up to Options::chunk_bytes), so
  // a restore's memory is about the staging plus lanes x one chunk (with 8
  // lanes and 4 MiB chunks the bench's restore grew RSS by 18 MiB, 6 with 2).
  size_t restore_read_ahead = DefaultRestoreLanes();
  // Snapshots accepted but not yet written, and the pinned bytes they hold.
  size_t snapshot_queue = 8;
  uint64_t snapshot_bytes = 64u << 20;
};

struct PipelineStats {
  uint64_t restores_ok = 0;
  uint64_t restores_failed = 0;  // cancelled ones included
  uint64_t restores_cancelled = 0;
  uint64_t restores_running = 0;
  uint64_t bytes_restored = 0;  // layer bytes of the restores that succeeded
  uint64_t snapshots_accepted = 0;
  uint64_t snapshots_shed = 0;
  uint64_t snapshots_written = 0;
  uint64_t snapshots_failed = 0;
  uint64_t bytes_snapshotted = 0;  // layer bytes of the snapshots written
  uint64_t staging_waits = 0;      // chunk reads that waited for a free buffer
  // Restore latency (start to completion) of the restores that succeeded:
  // counts per bucket, bucket i holding [2^i, 2^(i+1)) microseconds (the
  // last one everything above), and the sum.
  static constexpr size_t kLatencyBuckets = 24;
  uint64_t restore_latency_us[kLatencyBuckets] = {};
  uint64_t restore_latency_us_sum = 0;
  // Their throughput (layer bytes / latency): bucket i holding
  // [2^i, 2^(i+1)) MiB/s, the last one everything above; the sum in MiB/s.
  static constexpr size_t kThroughputBuckets = 18;
  uint64_t restore_throughput_mibps[kThroughputBuckets] = {};
  double restore_throughput_mibps_sum = 0;
};

// layer index -> the state it restores into / snapshots from.
using RestoreTargets = std::map<uint32_t, SeqState*>;
using SnapshotSources = std::map<uint32_t, const SeqState*>;
using RestoreCallback = std::function<void(Status)>;

struct RestoreOptions {
  // The stream the restore's copies and re-pools run on; unset: the
  // pipeline's own. Staging buffers return once this stream passed them.
  std::optional<StreamHandle> stream;
  // A lease (Store::AcquireLease / LookupOptions::lease) the restore
  // releases when it completes, whatever the outcome.
  LeaseId lease = 0;
  // Called once per layer as it completes, before the restore's own
  // completion. It runs on a backend thread (CUDA's callback thread), so it
  // must not block or call into the backend (see HostFunc).
  std::function<void(uint32_t layer)> on_layer;
  // Rows [first, last) only, of QSA and DSA targets that hold exactly rows
  // [0, first) (the engine has the head on its device already;
  // SeqState::PlanRestoreRows): every layer is still read and verified whole
  // (records and layer digest), and only the range is uploaded. Unset: whole
  // layers into fresh targets.
  struct Rows {
    uint64_t first = 0;
    uint64_t last = 0;
  };
  std::optional<Rows> rows;
};

// A restore in flight, shared by the engine and the pipeline. Every method
// may be called from any thread.
class RestoreHandle {
 public:
  virtual ~RestoreHandle() = default;

  // ---- the whole restore
  virtual bool done() const = 0;
  // Blocks until the restore completed; its result.
  virtual Status Wait() = 0;
  // Asks the restore to stop: it ends with Unavailable ("cancelled") unless
  // it already committed, and moves no counter. Returns at once.
  virtual void Cancel() = 0;

  // ---- one layer. A layer is done when its bytes (and, for QSA, its
  // re-pooled block keys) are on the device. The counters of all layers are
  // still committed together, when the restore completes; if it fails, no
  // counter moves, and LayersDone() says which layers' bytes were restored.
  virtual bool LayerDone(uint32_t layer) const = 0;
  // Blocks until `layer` is done (OK), or the restore failed before it was
  // (the restore's error). NotFound for a layer the restore does not target.
  virtual Status WaitLayer(uint32_t layer) = 0;
  // Makes `stream` wait, on the device, for `layer`'s work. Blocks the host
  // only until that work is enqueued (the layer's bytes read and verified),
  // not until it completed. Fails with the restore's error if it failed
  // before the layer was enqueued.
  virtual Status StreamWaitLayer(uint32_t layer, StreamHandle stream) = 0;
  // The same for every layer.
  virtual Status StreamWaitAll(StreamHandle stream) = 0;
  // The event recorded after `layer`'s work: Unavailable until that work is
  // enqueued. Valid while the handle lives.
  virtual Result<EventHandle> LayerEvent(uint32_t layer) const = 0;
  // The layers done so far, ascending.
  virtual std::vector<uint32_t> LayersDone() const = 0;
};

// How GpuPipeline::Snapshot puts a snapshot (PutOptions, owned).
struct SnapshotOptions {
  std::optional<TokenDigest> token_digest;
  std::vector<Prefix> block_chain;
  uint32_t block_size = 0;
  // Runs once when an accepted snapshot's write ends, on a pipeline thread,
  // before Flush counts it: OK (written, as durable as the store's
  // Durability makes a put) or the write's error, which names the prefix.
  // Not run for a snapshot Snapshot() refused or shed.
  RestoreCallback done;
};

class GpuPipeline {
 public:
  // `store` and `gpu` must outlive the pipeline.
  static Result<std::unique_ptr<GpuPipeline>> Create(Store& store, GpuBackend& gpu,
                                                     const PipelineOptions& options = {});
  // Waits for running restores and accepted snapshots.
  ~GpuPipeline();
  GpuPipeline(const GpuPipeline&) = delete;
  GpuPipeline& operator=(const GpuPipeline&) = delete;

  // Starts a restore; `done` (may be empty) runs once, on a pipeline
  // thread, after the handle reports done. Errors found before any work
  // (a missing snapshot, a bad target) complete the handle with that error.
  std::shared_ptr<RestoreHandle> StartRestore(NamespaceId ns, const Prefix& prefix,
                                              RestoreTargets targets,
                                              const RestoreOptions& options = {},
                                              RestoreCallback done = {});

  // The same with only a completion: `stream` 0 = the pipeline's own stream.
  void Restore(NamespaceId ns, const Prefix& prefix, RestoreTargets targets, StreamHandle stream,
               RestoreCallback done);
  std::future<Status> Restore(NamespaceId ns, const Prefix& prefix, RestoreTargets targets,
                              StreamHandle stream);

  // OK: accepted (its D2H copies are enqueued on `stream`; the write follows).
  // Capacity: shed, nothing enqueued. Other errors: refused, nothing
  // enqueued: bad sources, the legacy default stream (refused as restores
  // refuse it), a namespace the store does not know, a layer its geometry
  // or declared opaque shape refuses.
  // The sources may change once `stream` has passed the copies.
  Status Snapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                  const SnapshotSources& sources, StreamHandle stream);
  // The same, put with `options` (a token digest; a block chain, so the
  // QSA/DSA rows go into pages shared with the chain's other snapshots:
  // only pages not yet stored are written. The D2H still copies every row).
  // A chain without a block size, or longer than token_count / block_size,
  // is refused here, before anything is enqueued.
  Status Snapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                  const SnapshotSources& sources, StreamHandle stream, SnapshotOptions options);
  // Waits until every accepted snapshot is written; returns the first write
  // error since the last Flush.
  Status Flush();

  PipelineStats stats() const;
  // The pipeline's own stream (restores without RestoreOptions::stream).
  StreamHandle stream() const;
  Store& store() const;
  GpuBackend& backend() const;

  class Core;  // internal (pipeline/pipeline_core.h)

 private:
  explicit GpuPipeline(std::unique_ptr<Core> core);
  std::unique_ptr<Core> core_;
};

}  // namespace auxstore
