// GpuPipeline: restore snapshots from a Store into device sequence states,
// and take snapshots off the engine's thread (design.md section 4).
//
// Restore: manifest -> every layer's header checked against its target
// before any upload -> chunks read in order per layer, several layers at
// once (Store::ReadChunkInto straight into pinned staging, on an Asio pool;
// envelope check, whole-blob hash and copy in one pass), uploaded with
// CopyH2DAsync; reading chunk k+1 overlaps the upload of chunk k ->
// whole-blob XXH3 compared with the manifest before a layer's last chunk is
// uploaded -> QSA re-pool launched -> counters committed, all layers at
// once -> completion, once the stream has passed the restored work. Any
// failure: an error and no counter moved; Corruption also quarantines the
// snapshot. Targets must be fresh and untouched until the completion.
//
// Snapshot: the states' bytes are copied D2H on the engine's stream into a
// bounded pinned arena; a host callback hands the blob to the Asio pool,
// which writes it (Store::PutSnapshot). When the queue or the arena is full
// the snapshot is shed (Capacity) and counted; the engine never blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>

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
  size_t io_threads = 2;
  // Layers a restore streams at once (>= 1), each by one lane reading its
  // chunks in order; chunk reads in flight per restore are at most this many.
  // Lanes beyond io_threads only queue.
  size_t restore_read_ahead = 2;
  // Snapshots accepted but not yet written, and the pinned bytes they hold.
  size_t snapshot_queue = 8;
  uint64_t snapshot_bytes = 64u << 20;
};

struct PipelineStats {
  uint64_t restores_ok = 0;
  uint64_t restores_failed = 0;
  uint64_t snapshots_accepted = 0;
  uint64_t snapshots_shed = 0;
  uint64_t snapshots_written = 0;
  uint64_t snapshots_failed = 0;
  uint64_t staging_waits = 0;  // chunk reads that waited for a free buffer
};

// layer index -> the state it restores into / snapshots from.
using RestoreTargets = std::map<uint32_t, SeqState*>;
using SnapshotSources = std::map<uint32_t, const SeqState*>;
using RestoreCallback = std::function<void(Status)>;

class GpuPipeline {
 public:
  // `store` and `gpu` must outlive the pipeline.
  static Result<std::unique_ptr<GpuPipeline>> Create(Store& store, GpuBackend& gpu,
                                                     const PipelineOptions& options = {});
  // Waits for running restores and accepted snapshots.
  ~GpuPipeline();
  GpuPipeline(const GpuPipeline&) = delete;
  GpuPipeline& operator=(const GpuPipeline&) = delete;

  // `done` runs once, on a pipeline thread.
  void Restore(NamespaceId ns, const Prefix& prefix, RestoreTargets targets, StreamHandle stream,
               RestoreCallback done);
  std::future<Status> Restore(NamespaceId ns, const Prefix& prefix, RestoreTargets targets,
                              StreamHandle stream);

  // OK: accepted (its D2H copies are enqueued on `stream`; the write follows).
  // Capacity: shed, nothing enqueued. Other errors: refused (bad sources).
  // The sources may change once `stream` has passed the copies.
  Status Snapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                  const SnapshotSources& sources, StreamHandle stream);
  // Waits until every accepted snapshot is written; returns the first write
  // error since the last Flush.
  Status Flush();

  PipelineStats stats() const;

  struct Core;  // internal (pipeline/pipeline_core.h)

 private:
  explicit GpuPipeline(std::unique_ptr<Core> core);
  std::unique_ptr<Core> core_;
};

}  // namespace auxstore
