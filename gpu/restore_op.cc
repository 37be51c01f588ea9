// One restore: a chain of Asio handlers (validate heads, stream chunks,
// commit) over the staging pool. No handler blocks on a free buffer.
#include <atomic>
#include <boost/asio/post.hpp>
#include <string>
#include <vector>

#include "auxstore/blob_hash.h"
#include "gpu/pipeline_core.h"

namespace auxstore::gpu {

namespace {

namespace asio = boost::asio;

class RestoreOp : public std::enable_shared_from_this<RestoreOp> {
 public:
  RestoreOp(GpuPipeline::Core& core, NamespaceId ns, const Prefix& prefix, RestoreTargets targets,
            StreamHandle stream, RestoreCallback done)
      : core_(core),
        ns_(ns),
        prefix_(prefix),
        targets_(std::move(targets)),
        stream_(stream),
        done_(std::move(done)) {}

  void Start() {
    Status st = Prepare();
    if (!st.ok()) return Finish(st);
    ValidateNext(0, 0);
  }

 private:
  struct Layer {
    uint32_t index = 0;
    SeqState* target = nullptr;
    LayerEntry entry;
    std::vector<uint8_t> head;
    RestorePlan plan;
    BlobHasher hasher;
  };

  // Everything checkable without reading a chunk.
  Status Prepare() {
    if (targets_.empty()) return Status::InvalidArgument("restore: no target layers");
    AUXSTORE_ASSIGN_OR_RETURN(manifest_, core_.store.GetManifest(ns_, prefix_));
    for (auto& [index, target] : targets_) {
      const std::string where = "restore layer " + std::to_string(index);
      if (target == nullptr) return Status::InvalidArgument(where + ": null target");
      if (!target->fresh()) {
        return Status::InvalidArgument(where +
                                       ": target state is not fresh (restore only "
                                       "targets a sequence state nothing was written to)");
      }
      const LayerEntry* e = manifest_.FindLayer(index);
      if (e == nullptr) return Status::NotFound(where + ": not in the snapshot");
      if (e->kind != target->kind()) {
        return Status::InvalidArgument(where + ": snapshot holds " +
                                       std::string(KindName(e->kind)) + ", target is " +
                                       std::string(KindName(target->kind())));
      }
      if (e->bytes > 0 &&
          ChunkSize(e->bytes, manifest_.chunk_bytes, 0) > core_.staging->buffer_bytes()) {
        return Status::InvalidArgument(where + ": store chunks of " +
                                       std::to_string(manifest_.chunk_bytes) +
                                       " bytes exceed the staging buffers");
      }
      Layer l;
      l.index = index;
      l.target = target;
      l.entry = *e;
      layers_.push_back(std::move(l));
    }
    return Status::Ok();
  }

  // Reads chunk `chunk` of layer `li` into a staging buffer, then `then`.
  void ReadChunk(size_t li, uint32_t chunk, std::function<void(StagingPool::Buffer)> then) {
    auto self = shared_from_this();
    core_.staging->AsyncAcquire([self, li, chunk, then = std::move(then)](StagingPool::Buffer b) {
      Layer& l = self->layers_[li];
      const uint64_t size = ChunkSize(l.entry.bytes, self->manifest_.chunk_bytes, chunk);
      Status st = self->core_.store.ReadChunkInto(self->ns_, self->prefix_, self->manifest_,
                                                  l.index, chunk, b.span().first(size));
      if (!st.ok()) {
        self->core_.staging->Release(b);
        return self->Fail(st.WithContext("restore layer " + std::to_string(l.index)));
      }
      then(StagingPool::Buffer{b.data, static_cast<size_t>(size)});
    });
  }

  // Phase 1: every layer's header checked against its target, no upload.
  void ValidateNext(size_t li, uint32_t chunk) {
    if (li == layers_.size()) return StreamNext(0, 0);
    Layer& l = layers_[li];
    const size_t need = l.target->head_bytes();
    if (l.head.size() >= need || chunk >= l.entry.chunks) {
      auto plan = l.target->PlanRestore(l.head, l.entry.bytes);
      if (!plan.ok()) {
        return Fail(plan.status().WithContext("restore layer " + std::to_string(l.index)));
      }
      l.plan = std::move(*plan);
      l.head.clear();
      return ValidateNext(li + 1, 0);
    }
    auto self = shared_from_this();
    ReadChunk(li, chunk, [self, li, chunk, need](StagingPool::Buffer b) {
      Layer& layer = self->layers_[li];
      const size_t take = std::min(need - layer.head.size(), b.size);
      layer.head.insert(layer.head.end(), b.data, b.data + take);
      self->core_.staging->Release(b);  // nothing was enqueued from it
      self->ValidateNext(li, chunk + 1);
    });
  }

  // Phase 2: chunks in order; the read of chunk k+1 runs while the stream
  // uploads chunk k.
  void StreamNext(size_t li, uint32_t chunk) {
    if (failed_.load()) return;
    if (li == layers_.size()) return Commit();
    Layer& l = layers_[li];
    if (chunk >= l.entry.chunks) {
      if (l.hasher.Digest() != l.entry.xxh3) {
        return Fail(Status::Corruption("restore layer " + std::to_string(l.index) +
                                       ": whole-blob XXH3 does not match the manifest"));
      }
      return StreamNext(li + 1, 0);
    }
    auto self = shared_from_this();
    ReadChunk(li, chunk, [self, li, chunk](StagingPool::Buffer b) {
      Status st = self->Upload(li, chunk, b);
      Status rel = self->core_.staging->ReleaseAfter(b, self->stream_);
      if (!st.ok()) return self->Fail(st);
      if (!rel.ok()) return self->Fail(rel);
      self->StreamNext(li, chunk + 1);
    });
  }

  Status Upload(size_t li, uint32_t chunk, StagingPool::Buffer b) {
    Layer& l = layers_[li];
    l.hasher.Update({b.data, b.size});
    const uint64_t lo = uint64_t{chunk} * manifest_.chunk_bytes, hi = lo + b.size;
    for (const BlobSegment& seg : l.plan.segments) {
      const uint64_t s = std::max(lo, seg.blob_offset);
      const uint64_t e = std::min(hi, seg.blob_offset + seg.bytes);
      if (s >= e) continue;
      AUXSTORE_RETURN_IF_ERROR(core_.gpu.CopyH2DAsync({b.data + (s - lo), e - s}, seg.device,
                                                      seg.device_offset + (s - seg.blob_offset),
                                                      stream_));
    }
    return Status::Ok();
  }

  // Phase 3: re-pools for every layer, then every counter at once.
  void Commit() {
    for (Layer& l : layers_) {
      Status st = l.target->FinishRestore(l.plan, stream_);
      if (!st.ok()) return Fail(st.WithContext("restore layer " + std::to_string(l.index)));
    }
    for (Layer& l : layers_) l.target->CommitRestore(l.plan);
    auto self = shared_from_this();
    Status st = core_.gpu.LaunchHostFunc(
        stream_, [self] { asio::post(self->core_.pool, [self] { self->Finish(Status::Ok()); }); });
    if (!st.ok()) Finish(core_.gpu.Synchronize(stream_));
  }

  void Fail(Status st) {
    if (failed_.exchange(true)) return;
    if (st.IsCorruption()) (void)core_.store.Quarantine(ns_, prefix_, st);
    Finish(std::move(st));
  }

  void Finish(Status st) {
    RestoreCallback done = std::move(done_);
    const bool ok = st.ok();
    done(std::move(st));
    std::lock_guard lock(core_.mu);
    ++(ok ? core_.stats.restores_ok : core_.stats.restores_failed);
    --core_.restores_running;
    core_.cv.notify_all();
  }

  GpuPipeline::Core& core_;
  const NamespaceId ns_;
  const Prefix prefix_;
  const RestoreTargets targets_;
  const StreamHandle stream_;
  RestoreCallback done_;
  Manifest manifest_;
  std::vector<Layer> layers_;
  std::atomic<bool> failed_{false};
};

}  // namespace

void StartRestore(GpuPipeline::Core& core, NamespaceId ns, const Prefix& prefix,
                  RestoreTargets targets, StreamHandle stream, RestoreCallback done) {
  {
    std::lock_guard lock(core.mu);
    ++core.restores_running;
  }
  auto op =
      std::make_shared<RestoreOp>(core, ns, prefix, std::move(targets), stream, std::move(done));
  asio::post(core.pool, [op] { op->Start(); });
}

}  // namespace auxstore::gpu
