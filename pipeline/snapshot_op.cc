// GpuPipeline::Snapshot: D2H into the pinned arena on the engine's
// stream, then a write-behind PutSnapshot on the Asio pool. Never blocks:
// a full queue or arena sheds the snapshot.
#include <boost/asio/post.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "pipeline/pipeline_core.h"

namespace auxstore {

namespace {

struct SnapshotJob {
  NamespaceId ns = 0;
  Prefix prefix;
  uint64_t token_count = 0;
  std::vector<LayerBlob> layers;  // spans into `buffer`
  uint8_t* buffer = nullptr;
  SnapshotOptions options;
};

void WriteSnapshot(GpuPipeline::Core& core, const SnapshotJob& job) {
  PutOptions put;
  put.token_digest = job.options.token_digest;
  put.block_chain = job.options.block_chain;
  put.block_size = job.options.block_size;
  Status st = core.store().PutSnapshot(job.ns, job.prefix, job.token_count, job.layers, put);
  core.arena().Free(job.buffer);
  uint64_t bytes = 0;
  for (const LayerBlob& l : job.layers) bytes += l.bytes.size();
  if (!st.ok()) st = st.WithContext("snapshot of prefix " + job.prefix.ToHex());
  if (job.options.done) job.options.done(st);
  core.EndSnapshot(st, bytes);
}

}  // namespace

Status GpuPipeline::Snapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                             const SnapshotSources& sources, StreamHandle stream) {
  return Snapshot(ns, prefix, token_count, sources, stream, SnapshotOptions{});
}

Status GpuPipeline::Snapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                             const SnapshotSources& sources, StreamHandle stream,
                             SnapshotOptions options) {
  if (sources.empty()) return Status::InvalidArgument("snapshot: no layers");
  if (stream == kDefaultStream) {
    return Status::InvalidArgument(
        "snapshot: the legacy default stream is not allowed (as for restores: it serializes "
        "against every blocking stream of the engine); pass the engine's stream");
  }
  AUXSTORE_RETURN_IF_ERROR(
      CheckBlockChain(options.block_chain.size(), options.block_size, token_count)
          .WithContext("snapshot"));
  // What the write would refuse is refused here, before anything is
  // enqueued: the namespace, and each layer's kind, header and size.
  Result<NamespaceSpec> spec = core_->store().GetNamespace(ns);
  if (!spec.ok()) return spec.status().WithContext("snapshot");

  std::vector<std::pair<uint32_t, SnapshotPlan>> plans;
  uint64_t total = 0;
  for (const auto& [index, state] : sources) {
    if (state == nullptr) return Status::InvalidArgument("snapshot: null source state");
    AUXSTORE_ASSIGN_OR_RETURN(SnapshotPlan plan, state->PlanSnapshot());
    AUXSTORE_RETURN_IF_ERROR(
        CheckLayerBlob(index, state->kind(), plan.header, plan.blob_bytes, *spec)
            .WithContext("snapshot layer " + std::to_string(index)));
    if (__builtin_add_overflow(total, plan.blob_bytes, &total)) {
      return Status::InvalidArgument("snapshot: the layers' sizes overflow 64 bits");
    }
    plans.emplace_back(index, std::move(plan));
  }
  Core& core = *core_;
  AUXSTORE_RETURN_IF_ERROR(core.ReserveSnapshot());
  uint8_t* buffer = core.arena().TryAllocate(total);
  if (buffer == nullptr) {
    return core.SnapshotShed("no room in the pinned snapshot arena for " + std::to_string(total) +
                             " bytes");
  }

  auto job = std::make_shared<SnapshotJob>();
  job->ns = ns;
  job->prefix = prefix;
  job->token_count = token_count;
  job->buffer = buffer;
  job->options = std::move(options);
  Status st;
  uint64_t off = 0;
  for (const auto& [index, plan] : plans) {
    uint8_t* blob = buffer + off;
    if (!plan.header.empty()) {  // opaque blobs have none (and a null data())
      std::memcpy(blob, plan.header.data(), plan.header.size());
    }
    for (const BlobSegment& seg : plan.segments) {
      st = core.gpu().CopyD2HAsync(seg.device, seg.device_offset,
                                   {blob + seg.blob_offset, seg.bytes}, stream);
      if (!st.ok()) break;
    }
    if (!st.ok()) break;
    job->layers.push_back(LayerBlob{index, sources.at(index)->kind(), {blob, plan.blob_bytes}});
    off += plan.blob_bytes;
  }
  if (st.ok()) {
    Core* c = &core;
    st = core.gpu().LaunchHostFunc(
        stream, [c, job] { boost::asio::post(c->pool(), [c, job] { WriteSnapshot(*c, *job); }); });
    if (st.ok()) {
      core.SnapshotAccepted();
      return Status::Ok();
    }
  }
  // Copies may already be enqueued into the buffer: free it only after them.
  (void)core.gpu().Synchronize(stream);
  core.arena().Free(buffer);
  core.AbandonSnapshot();
  return st.WithContext("snapshot");
}

}  // namespace auxstore
