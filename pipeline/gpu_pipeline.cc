// GpuPipeline: construction and teardown, restore entry points, stats; the
// Core's shared state and counters.
#include "auxstore/gpu_pipeline.h"

#include <algorithm>
#include <bit>

#include "auxstore/asio_restore.h"
#include "pipeline/pipeline_core.h"

namespace auxstore {

// ---- Core -------------------------------------------------------------------

GpuPipeline::Core::Core(Store& s, GpuBackend& g, const PipelineOptions& o)
    : store_(s), gpu_(g), options_(o), pool_(o.io_threads) {}

Result<std::unique_ptr<GpuPipeline::Core>> GpuPipeline::Core::Create(
    Store& store, GpuBackend& gpu, const PipelineOptions& options) {
  if (options.io_threads == 0 || options.snapshot_queue == 0 || options.restore_read_ahead == 0) {
    return Status::InvalidArgument(
        "pipeline: io_threads, snapshot_queue and restore_read_ahead must be > 0");
  }
  std::unique_ptr<Core> core(new Core(store, gpu, options));
  AUXSTORE_ASSIGN_OR_RETURN(core->staging_,
                            pipeline::StagingPool::Create(gpu, core->pool_, options.staging_buffers,
                                                          options.staging_bytes));
  AUXSTORE_ASSIGN_OR_RETURN(core->arena_,
                            pipeline::PinnedArena::Create(gpu, options.snapshot_bytes));
  // Restores get a stream of their own (non-blocking on CUDA), never the
  // legacy default stream.
  AUXSTORE_ASSIGN_OR_RETURN(core->stream_, gpu.CreateStream());
  core->own_stream_ = true;
  return core;
}

GpuPipeline::Core::~Core() {
  WaitIdle();
  if (staging_) staging_->WaitAllReturned();  // their returns are posted to the pool
  pool_.join();
  if (own_stream_) (void)gpu_.DestroyStream(stream_);
}

void GpuPipeline::Core::WaitIdle() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return restores_running_ == 0 && snapshots_pending_ == 0; });
}

void GpuPipeline::Core::BeginRestore() {
  std::lock_guard lock(mu_);
  ++restores_running_;
}

void GpuPipeline::Core::CountRestore(const Status& result, uint64_t bytes,
                                     std::chrono::microseconds latency) {
  std::lock_guard lock(mu_);
  if (!result.ok()) {
    ++stats_.restores_failed;
    if (result.code() == StatusCode::kUnavailable &&
        result.message().find("cancelled") != std::string::npos) {
      ++stats_.restores_cancelled;
    }
    return;
  }
  ++stats_.restores_ok;
  stats_.bytes_restored += bytes;
  const uint64_t us = static_cast<uint64_t>(std::max<int64_t>(latency.count(), 0));
  const size_t bucket =
      std::min<size_t>(us == 0 ? 0 : std::bit_width(us) - 1, PipelineStats::kLatencyBuckets - 1);
  ++stats_.restore_latency_us[bucket];
  stats_.restore_latency_us_sum += us;
  const double mibps = static_cast<double>(bytes) / (1 << 20) / (std::max<uint64_t>(us, 1) * 1e-6);
  const uint64_t whole = static_cast<uint64_t>(mibps);
  const size_t tb = std::min<size_t>(whole == 0 ? 0 : std::bit_width(whole) - 1,
                                     PipelineStats::kThroughputBuckets - 1);
  ++stats_.restore_throughput_mibps[tb];
  stats_.restore_throughput_mibps_sum += mibps;
}

void GpuPipeline::Core::EndRestore() {
  std::lock_guard lock(mu_);
  --restores_running_;
  cv_.notify_all();
}

Status GpuPipeline::Core::ReserveSnapshot() {
  std::lock_guard lock(mu_);
  if (snapshots_pending_ >= options_.snapshot_queue) {
    ++stats_.snapshots_shed;
    return Status::Capacity("snapshot shed: the write-behind queue is full");
  }
  ++snapshots_pending_;
  return Status::Ok();
}

void GpuPipeline::Core::SnapshotAccepted() {
  std::lock_guard lock(mu_);
  ++stats_.snapshots_accepted;
}

Status GpuPipeline::Core::SnapshotShed(std::string why) {
  std::lock_guard lock(mu_);
  ++stats_.snapshots_shed;
  --snapshots_pending_;
  cv_.notify_all();
  return Status::Capacity("snapshot shed: " + why);
}

void GpuPipeline::Core::AbandonSnapshot() {
  std::lock_guard lock(mu_);
  --snapshots_pending_;
  cv_.notify_all();
}

void GpuPipeline::Core::EndSnapshot(const Status& written, uint64_t bytes) {
  std::lock_guard lock(mu_);
  if (written.ok()) {
    ++stats_.snapshots_written;
    stats_.bytes_snapshotted += bytes;
  } else {
    ++stats_.snapshots_failed;
    if (flush_error_.ok()) flush_error_ = written.WithContext("snapshot write");
  }
  --snapshots_pending_;
  cv_.notify_all();
}

Status GpuPipeline::Core::WaitSnapshotsWritten() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return snapshots_pending_ == 0; });
  return std::exchange(flush_error_, Status::Ok());
}

PipelineStats GpuPipeline::Core::stats() const {
  std::lock_guard lock(mu_);
  PipelineStats s = stats_;
  s.restores_running = restores_running_;
  s.staging_waits = staging_->waits();
  return s;
}

// ---- GpuPipeline ------------------------------------------------------------

GpuPipeline::GpuPipeline(std::unique_ptr<Core> core) : core_(std::move(core)) {}

Result<std::unique_ptr<GpuPipeline>> GpuPipeline::Create(Store& store, GpuBackend& gpu,
                                                         const PipelineOptions& options) {
  AUXSTORE_ASSIGN_OR_RETURN(auto core, Core::Create(store, gpu, options));
  return std::unique_ptr<GpuPipeline>(new GpuPipeline(std::move(core)));
}

GpuPipeline::~GpuPipeline() = default;

std::shared_ptr<RestoreHandle> GpuPipeline::StartRestore(NamespaceId ns, const Prefix& prefix,
                                                         RestoreTargets targets,
                                                         const RestoreOptions& options,
                                                         RestoreCallback done) {
  return pipeline::StartRestore(*core_, ns, prefix, std::move(targets), options, std::move(done));
}

void GpuPipeline::Restore(NamespaceId ns, const Prefix& prefix, RestoreTargets targets,
                          StreamHandle stream, RestoreCallback done) {
  RestoreOptions o;
  if (stream != kDefaultStream) o.stream = stream;
  (void)StartRestore(ns, prefix, std::move(targets), o, std::move(done));
}

std::future<Status> GpuPipeline::Restore(NamespaceId ns, const Prefix& prefix,
                                         RestoreTargets targets, StreamHandle stream) {
  RestoreOptions o;
  if (stream != kDefaultStream) o.stream = stream;
  return async_restore(*this, ns, prefix, std::move(targets), o, boost::asio::use_future);
}

Status GpuPipeline::Flush() { return core_->WaitSnapshotsWritten(); }

PipelineStats GpuPipeline::stats() const { return core_->stats(); }
StreamHandle GpuPipeline::stream() const { return core_->stream(); }
Store& GpuPipeline::store() const { return core_->store(); }
GpuBackend& GpuPipeline::backend() const { return core_->gpu(); }

}  // namespace auxstore
