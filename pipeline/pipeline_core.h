// What a GpuPipeline's restores and snapshots share: the store, the backend,
// the Asio pool, the staging buffers, the snapshot arena, the pipeline's own
// stream and the counters. The counters change only through the Begin/End
// operations below.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "auxstore/gpu_pipeline.h"
#include "pipeline/pinned_arena.h"
#include "pipeline/staging_pool.h"

namespace auxstore {

class GpuPipeline::Core {
 public:
  static Result<std::unique_ptr<Core>> Create(Store& store, GpuBackend& gpu,
                                              const PipelineOptions& options);
  // Waits for running restores and pending snapshots, every staging buffer
  // back, the pool's threads; then frees the stream.
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  Store& store() const { return store_; }
  GpuBackend& gpu() const { return gpu_; }
  const PipelineOptions& options() const { return options_; }
  boost::asio::thread_pool& pool() { return pool_; }
  pipeline::StagingPool& staging() const { return *staging_; }
  pipeline::PinnedArena& arena() const { return *arena_; }
  StreamHandle stream() const { return stream_; }

  // ---- restores: Begin when one starts; Count its result before its
  // completion runs (whoever sees the completion sees the count); End after
  // (the destructor waits for running restores).
  void BeginRestore();
  void CountRestore(const Status& result, uint64_t bytes, std::chrono::microseconds latency);
  void EndRestore();

  // ---- snapshots: Reserve a queue slot (Capacity, counted as shed, when
  // the queue is full); then Accepted, or Shed/Abandon to give the slot
  // back; a written or failed one Ends it.
  Status ReserveSnapshot();
  void SnapshotAccepted();
  Status SnapshotShed(std::string why);  // gives the slot back; returns Capacity(why)
  void AbandonSnapshot();                // gives the slot back, counts nothing
  void EndSnapshot(const Status& written, uint64_t bytes);
  // Waits until no snapshot is pending; the first write error since the
  // last call (then cleared).
  Status WaitSnapshotsWritten();

  PipelineStats stats() const;

 private:
  Core(Store& s, GpuBackend& g, const PipelineOptions& o);
  void WaitIdle();

  Store& store_;
  GpuBackend& gpu_;
  const PipelineOptions options_;
  // Declared before what runs on it, so it is destroyed last.
  boost::asio::thread_pool pool_;
  std::unique_ptr<pipeline::StagingPool> staging_;
  std::unique_ptr<pipeline::PinnedArena> arena_;
  StreamHandle stream_ = kDefaultStream;
  bool own_stream_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // restores_running or snapshots_pending fell
  uint64_t restores_running_ = 0;
  uint64_t snapshots_pending_ = 0;
  PipelineStats stats_;
  Status flush_error_;  // first snapshot write error since the last Flush
};

namespace pipeline {

// Starts one restore on core.pool(); the handle completes exactly once and
// `done` (if any) runs after it did.
std::shared_ptr<RestoreHandle> StartRestore(GpuPipeline::Core& core, NamespaceId ns,
                                            const Prefix& prefix, RestoreTargets targets,
                                            const RestoreOptions& options, RestoreCallback done);

}  // namespace pipeline
}  // namespace auxstore
