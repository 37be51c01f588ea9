// One restore: Asio handlers over the staging pool, none of which blocks on
// a free buffer.
//
//  1. Prepare: manifest, and every target checked (kind, freshness, staging
//     size) without reading a chunk.
//  2. Validate: each layer's header is read with its chunk 0 and checked
//     against its target before anything is uploaded. The staged chunk 0 is
//     kept for the upload while the pool's hold budget allows (otherwise it
//     is read again in step 3).
//  3. Stream: every chunk in blob order, restore_read_ahead reads in flight (2 by
//     default: perf-notes.md found two readers ahead best) on the
//     Asio pool while the stream uploads earlier chunks. Buffers are acquired
//     in chunk order, so a restore waiting for a buffer holds none it still
//     has to fill: concurrent restores cannot deadlock. Chunks are hashed and
//     uploaded in order; a buffer returns once its copy has completed.
//  4. Commit: whole-blob hashes matched, QSA re-pools enqueued, every
//     counter set at once, completion after the stream passed the work.
// A failure at any step moves no counter; the completion of a failed restore
// also waits for the stream to pass whatever it had already uploaded.
#include <boost/asio/post.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/blob_hash.h"
#include "gpu/pipeline_core.h"

namespace auxstore::gpu {

namespace {

namespace asio = boost::asio;
using Buffer = StagingPool::Buffer;

std::string LayerWhere(uint32_t layer) { return "restore layer " + std::to_string(layer); }

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
    if (!st.ok()) return Fail(st);
    ValidateNext(0);
  }

 private:
  struct Layer {
    uint32_t index = 0;
    SeqState* target = nullptr;
    LayerEntry entry;
    RestorePlan plan;
    BlobHasher hasher;
    std::optional<Buffer> kept;  // chunk 0, staged during validation (a hold)
  };
  struct Item {  // one chunk to stream
    size_t layer = 0;
    uint32_t chunk = 0;
  };
  struct Staged {
    Buffer buf;
    bool held = false;  // counted by StagingPool::TryHold
  };

  // ---- 1. prepare ----------------------------------------------------------

  Status Prepare() {
    if (targets_.empty()) return Status::InvalidArgument("restore: no target layers");
    AUXSTORE_ASSIGN_OR_RETURN(manifest_, core_.store.GetManifest(ns_, prefix_));
    for (auto& [index, target] : targets_) {
      const std::string where = LayerWhere(index);
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
      Layer& l = layers_.emplace_back();
      l.index = index;
      l.target = target;
      l.entry = *e;
    }
    return Status::Ok();
  }

  // ---- 2. validate (one layer at a time) -----------------------------------

  uint64_t SizeOf(const Layer& l, uint32_t chunk) const {
    return ChunkSize(l.entry.bytes, manifest_.chunk_bytes, chunk);
  }

  void ValidateNext(size_t li) {
    // Layers without a header (opaque, or empty blobs) plan from the size.
    for (; li < layers_.size(); ++li) {
      Layer& l = layers_[li];
      if (l.target->head_bytes() > 0 && l.entry.bytes > 0) break;
      auto plan = l.target->PlanRestore({}, l.entry.bytes);
      if (!plan.ok()) return Fail(plan.status().WithContext(LayerWhere(l.index)));
      l.plan = std::move(*plan);
    }
    if (li == layers_.size()) return StartStream();
    auto self = shared_from_this();
    core_.staging->AsyncAcquire([self, li](Buffer b) { self->ValidateWith(li, b); });
  }

  // Reads the header's chunks into `b` (chunk 0 alone unless chunks are
  // smaller than the header), plans the restore, and keeps chunk 0 staged if
  // it is the only chunk read and the hold budget allows.
  void ValidateWith(size_t li, Buffer b) {
    Layer& l = layers_[li];
    const size_t need = l.target->head_bytes();
    std::vector<uint8_t> head;
    uint32_t c = 0;
    for (; head.size() < need && c < l.entry.chunks; ++c) {
      const uint64_t size = SizeOf(l, c);
      Status st =
          core_.store.ReadChunkInto(ns_, prefix_, manifest_, l.index, c, b.span().first(size));
      if (!st.ok()) {
        core_.staging->Release(b);
        return Fail(st.WithContext(LayerWhere(l.index)));
      }
      const size_t take = std::min<uint64_t>(need - head.size(), size);
      head.insert(head.end(), b.data, b.data + take);
    }
    auto plan = l.target->PlanRestore(head, l.entry.bytes);
    if (!plan.ok()) {
      core_.staging->Release(b);
      return Fail(plan.status().WithContext(LayerWhere(l.index)));
    }
    l.plan = std::move(*plan);
    if (c == 1 && core_.staging->TryHold()) {
      l.kept = Buffer{b.data, static_cast<size_t>(SizeOf(l, 0))};
    } else {
      core_.staging->Release(b);
    }
    ValidateNext(li + 1);
  }

  // ---- 3. stream -----------------------------------------------------------

  void StartStream() {
    for (size_t li = 0; li < layers_.size(); ++li) {
      for (uint32_t c = 0; c < layers_[li].entry.chunks; ++c) items_.push_back({li, c});
    }
    Advance(std::nullopt);
  }

  // Requests buffers for the next chunks, in order, up to restore_read_ahead chunks
  // not yet uploaded. Caller holds mu_.
  void Pump() {
    while (!failed_ && !acquiring_ && next_read_ < items_.size() &&
           next_read_ - next_upload_ < core_.options.restore_read_ahead) {
      const size_t idx = next_read_++;
      Layer& l = layers_[items_[idx].layer];
      if (items_[idx].chunk == 0 && l.kept) {
        ready_[idx] = Staged{*l.kept, true};
        l.kept.reset();
        continue;
      }
      acquiring_ = true;  // the next acquire waits for this one: chunk order
      auto self = shared_from_this();
      core_.staging->AsyncAcquire([self, idx](Buffer b) { self->ReadInto(idx, b); });
    }
  }

  void ReadInto(size_t idx, Buffer b) {
    {
      std::unique_lock lock(mu_);
      acquiring_ = false;
      if (failed_) {
        lock.unlock();
        return core_.staging->Release(b);
      }
      Pump();  // the next chunk's read overlaps this one
    }
    const Item& item = items_[idx];
    const Layer& l = layers_[item.layer];
    const uint64_t size = SizeOf(l, item.chunk);
    // A Corruption here has already quarantined the snapshot (store.h).
    Status st = core_.store.ReadChunkInto(ns_, prefix_, manifest_, l.index, item.chunk,
                                          b.span().first(size));
    if (!st.ok()) {
      core_.staging->Release(b);
      return Fail(st.WithContext(LayerWhere(l.index)));
    }
    Advance(Staged{Buffer{b.data, static_cast<size_t>(size)}, false}, idx);
  }

  // Adds a chunk just read (if any), requests more, uploads what is next in
  // order, and commits after the last chunk.
  void Advance(std::optional<Staged> read, size_t idx = 0) {
    bool quarantine = false;
    bool commit = false;
    Status st;
    {
      std::unique_lock lock(mu_);
      if (failed_) {
        lock.unlock();
        if (read) core_.staging->Release(read->buf);
        return;
      }
      if (read) ready_[idx] = *read;
      Pump();
      st = DrainReady(&quarantine);
      commit = st.ok() && next_upload_ == items_.size();
    }
    if (!st.ok()) return Fail(st, quarantine);
    if (commit) Commit();
  }

  // Hashes and uploads every ready chunk that is next in order. Caller holds
  // mu_. `quarantine` is set when the error is a whole-blob hash mismatch.
  Status DrainReady(bool* quarantine) {
    for (auto it = ready_.find(next_upload_); it != ready_.end(); it = ready_.find(next_upload_)) {
      const Staged s = it->second;
      ready_.erase(it);
      const Item item = items_[next_upload_++];
      Status st = Upload(item, s.buf, quarantine);
      if (s.held) core_.staging->EndHold();
      Status rel = core_.staging->ReleaseAfter(s.buf, stream_);
      if (!st.ok()) return st;
      if (!rel.ok()) return rel;
      Pump();
    }
    return Status::Ok();
  }

  Status Upload(const Item& item, Buffer b, bool* quarantine) {
    Layer& l = layers_[item.layer];
    l.hasher.Update({b.data, b.size});
    // The last chunk goes up only once the whole blob matches its manifest.
    if (item.chunk + 1 == l.entry.chunks && l.hasher.Digest() != l.entry.xxh3) {
      *quarantine = true;
      return Status::Corruption(LayerWhere(l.index) +
                                ": whole-blob XXH3 does not match the manifest");
    }
    const uint64_t lo = uint64_t{item.chunk} * manifest_.chunk_bytes, hi = lo + b.size;
    for (const BlobSegment& seg : l.plan.segments) {
      const uint64_t s = std::max(lo, seg.blob_offset);
      const uint64_t e = std::min(hi, seg.blob_offset + seg.bytes);
      if (s >= e) continue;
      uploaded_any_ = true;
      AUXSTORE_RETURN_IF_ERROR(core_.gpu.CopyH2DAsync({b.data + (s - lo), e - s}, seg.device,
                                                      seg.device_offset + (s - seg.blob_offset),
                                                      stream_));
    }
    return Status::Ok();
  }

  // ---- 4. commit -----------------------------------------------------------

  void Commit() {
    for (Layer& l : layers_) {
      Status st = l.target->FinishRestore(l.plan, stream_);
      if (!st.ok()) return Fail(st.WithContext(LayerWhere(l.index)));
    }
    for (Layer& l : layers_) l.target->CommitRestore(l.plan);
    FinishAfterStream(Status::Ok());
  }

  // ---- completion ----------------------------------------------------------

  // Runs once per restore, from whichever step failed first.
  void Fail(Status st, bool quarantine = false) {
    bool after_stream = false;
    {
      std::lock_guard lock(mu_);
      if (failed_) return;
      failed_ = true;
      // Buffers this restore staged but will not upload.
      for (auto& [idx, s] : ready_) {
        if (s.held) core_.staging->EndHold();
        core_.staging->Release(s.buf);
      }
      ready_.clear();
      for (Layer& l : layers_) {
        if (!l.kept) continue;
        core_.staging->EndHold();
        core_.staging->Release(*l.kept);
        l.kept.reset();
      }
      after_stream = uploaded_any_;
    }
    // Only what this pipeline itself found; a store read that failed with
    // Corruption has quarantined the snapshot already.
    if (quarantine) (void)core_.store.Quarantine(ns_, prefix_, st);
    if (after_stream) return FinishAfterStream(std::move(st));
    Finish(std::move(st));
  }

  // Completes once the stream has passed everything enqueued so far.
  void FinishAfterStream(Status st) {
    auto self = shared_from_this();
    Status launched = core_.gpu.LaunchHostFunc(
        stream_, [self, st] { asio::post(self->core_.pool, [self, st] { self->Finish(st); }); });
    if (launched.ok()) return;
    Status sync = core_.gpu.Synchronize(stream_);
    Finish(st.ok() ? sync : st);
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
  std::vector<Layer> layers_;  // fixed after Prepare
  std::vector<Item> items_;    // fixed before streaming starts

  // Streaming state, shared by the reads in flight.
  std::mutex mu_;
  bool failed_ = false;
  bool acquiring_ = false;  // a buffer request is queued
  bool uploaded_any_ = false;
  size_t next_read_ = 0;    // next item to request a buffer for
  size_t next_upload_ = 0;  // next item to hash and upload
  std::map<size_t, Staged> ready_;
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
