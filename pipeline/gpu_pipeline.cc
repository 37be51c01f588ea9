// GpuPipeline: construction and teardown, restore entry points, stats.
#include "auxstore/gpu_pipeline.h"

#include "pipeline/pipeline_core.h"

namespace auxstore {

GpuPipeline::GpuPipeline(std::unique_ptr<Core> core) : core_(std::move(core)) {}

Result<std::unique_ptr<GpuPipeline>> GpuPipeline::Create(Store& store, GpuBackend& gpu,
                                                         const PipelineOptions& options) {
  if (options.io_threads == 0 || options.snapshot_queue == 0 || options.restore_read_ahead == 0) {
    return Status::InvalidArgument(
        "pipeline: io_threads, snapshot_queue and restore_read_ahead must be > 0");
  }
  auto core = std::make_unique<Core>(store, gpu, options);
  auto staging =
      gpu::StagingPool::Create(gpu, core->pool, options.staging_buffers, options.staging_bytes);
  if (!staging.ok()) return staging.status();
  core->staging = std::move(*staging);
  auto arena = gpu::PinnedArena::Create(gpu, options.snapshot_bytes);
  if (!arena.ok()) return arena.status();
  core->arena = std::move(*arena);
  return std::unique_ptr<GpuPipeline>(new GpuPipeline(std::move(core)));
}

GpuPipeline::~GpuPipeline() {
  {
    std::unique_lock lock(core_->mu);
    core_->cv.wait(lock,
                   [&] { return core_->restores_running == 0 && core_->snapshots_pending == 0; });
  }
  core_->staging->WaitAllReturned();  // their returns are posted to the pool
  core_->pool.join();
}

void GpuPipeline::Restore(NamespaceId ns, const Prefix& prefix, RestoreTargets targets,
                          StreamHandle stream, RestoreCallback done) {
  gpu::StartRestore(*core_, ns, prefix, std::move(targets), stream, std::move(done));
}

std::future<Status> GpuPipeline::Restore(NamespaceId ns, const Prefix& prefix,
                                         RestoreTargets targets, StreamHandle stream) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> f = promise->get_future();
  Restore(ns, prefix, std::move(targets), stream,
          [promise](Status st) { promise->set_value(std::move(st)); });
  return f;
}

PipelineStats GpuPipeline::stats() const {
  std::lock_guard lock(core_->mu);
  PipelineStats s = core_->stats;
  s.staging_waits = core_->staging->waits();
  return s;
}

}  // namespace auxstore
