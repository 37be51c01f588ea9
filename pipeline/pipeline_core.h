// What a GpuPipeline's restores and snapshots share: the store, the backend,
// the Asio pool, the staging buffers, the snapshot arena and the counters.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "auxstore/gpu_pipeline.h"
#include "pipeline/pinned_arena.h"
#include "pipeline/staging_pool.h"

namespace auxstore {

struct GpuPipeline::Core {
  Core(Store& s, GpuBackend& g, const PipelineOptions& o)
      : store(s), gpu(g), options(o), pool(o.io_threads) {}

  Store& store;
  GpuBackend& gpu;
  const PipelineOptions options;
  // Declared before what runs on it, so it is destroyed last.
  boost::asio::thread_pool pool;
  std::unique_ptr<gpu::StagingPool> staging;
  std::unique_ptr<gpu::PinnedArena> arena;

  mutable std::mutex mu;
  std::condition_variable cv;  // restores_running or snapshots_pending fell
  uint64_t restores_running = 0;
  uint64_t snapshots_pending = 0;
  PipelineStats stats;
  Status flush_error;  // first snapshot write error since the last Flush
};

namespace gpu {

// Starts one restore on core.pool; `done` runs exactly once.
void StartRestore(GpuPipeline::Core& core, NamespaceId ns, const Prefix& prefix,
                  RestoreTargets targets, StreamHandle stream, RestoreCallback done);

}  // namespace gpu
}  // namespace auxstore
