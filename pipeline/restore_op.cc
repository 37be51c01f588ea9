// One restore: Asio handlers over the staging pool, none of which blocks on
// a free buffer.
//
//  1. Prepare: manifest, and every target checked (kind, freshness, staging
//     size) without reading a chunk.
//  2. Validate: each layer's header is read with its chunk 0 and checked
//     against its target before anything is uploaded. The staged chunk 0 is
//     kept for the upload while the pool's hold budget allows (otherwise it
//     is read again in step 3).
//  3. Stream: restore_read_ahead lanes (2 by default: perf-notes.md found two
//     readers ahead best) run on the Asio pool, each taking the next layer
//     not yet streamed and reading its chunks in order straight into
//     staging: envelope check, whole-blob hash and copy in one pass over the
//     bytes (a layer's hash needs its chunks in order). Each chunk is
//     uploaded as soon as it is staged; the last one only after the layer's
//     whole-blob hash matched. A lane holds one buffer at a time and waits
//     for the next holding none, so concurrent restores cannot deadlock; a
//     buffer returns once its copy has completed.
//  4. Commit: once every lane is done, QSA re-pools enqueued, every counter
//     set at once, completion after the stream passed the work.
// A failure at any step moves no counter; the completion of a failed restore
// waits for every lane to stop and for the stream to pass whatever was
// already uploaded.
#include <atomic>
#include <boost/asio/post.hpp>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/blob_hash.h"
#include "pipeline/pipeline_core.h"

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
          core_.store.ReadChunkInto(ns_, prefix_, manifest_, l.index, c, b.span().first(size),
                                    /*blob_hash=*/nullptr);  // hashed when streamed
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

  // ---- 3. stream (one lane per layer in flight) ---------------------------

  void StartStream() {
    const size_t lanes =
        std::min<size_t>(std::max<size_t>(core_.options.restore_read_ahead, 1), layers_.size());
    {
      std::lock_guard lock(mu_);
      lanes_running_ = lanes;
    }
    for (size_t i = 0; i < lanes; ++i) NextLayer();
  }

  // Gives this lane the next layer not yet streamed; ends the lane when none
  // is left or the restore failed.
  void NextLayer() {
    size_t li = 0;
    {
      std::lock_guard lock(mu_);
      if (!failed_ && next_layer_ < layers_.size())
        li = next_layer_++;
      else
        li = layers_.size();
    }
    if (li == layers_.size()) return EndLane();
    StreamChunk(li, 0);
  }

  void StreamChunk(size_t li, uint32_t c) {
    Layer& l = layers_[li];
    if (c == l.entry.chunks) return NextLayer();
    std::optional<Buffer> kept;  // chunk 0, staged and verified during validation
    if (c == 0) {
      std::lock_guard lock(mu_);  // Fail may return it meanwhile
      kept.swap(l.kept);
    }
    if (kept) return StageChunk(li, 0, *kept, /*kept=*/true);
    auto self = shared_from_this();
    core_.staging->AsyncAcquire([self, li, c](Buffer b) { self->StageChunk(li, c, b, false); });
  }

  // Reads chunk `c` of layer `li` into `b` (unless it is the kept chunk 0),
  // uploads it and goes on with the next chunk.
  void StageChunk(size_t li, uint32_t c, Buffer b, bool kept) {
    Layer& l = layers_[li];
    const uint64_t size = SizeOf(l, c);
    const ByteSpan staged{b.data, static_cast<size_t>(size)};
    Status st;
    bool quarantine = false;
    const bool stopped = failed();  // another lane failed: stop quietly
    if (!stopped && kept) l.hasher.Update(staged);
    if (!stopped && !kept) {
      // A Corruption here has already quarantined the snapshot (store.h).
      st = core_.store.ReadChunkInto(ns_, prefix_, manifest_, l.index, c, b.span().first(size),
                                     &l.hasher);
      if (!st.ok()) st = st.WithContext(LayerWhere(l.index));
    }
    // The last chunk goes up only once the whole blob matches its manifest.
    if (st.ok() && c + 1 == l.entry.chunks) {
      st = CheckLayerDigest(l.entry, l.hasher.Digest());
      quarantine = !st.ok();
    }
    if (st.ok() && !stopped) st = Upload(l, c, staged);
    if (kept) core_.staging->EndHold();
    Status released = core_.staging->ReleaseAfter(b, stream_);
    if (st.ok()) st = released;
    if (!st.ok()) Fail(st, quarantine);
    if (!st.ok() || stopped) return EndLane();
    StreamChunk(li, c + 1);
  }

  Status Upload(Layer& l, uint32_t chunk, ByteSpan b) {
    const uint64_t lo = uint64_t{chunk} * manifest_.chunk_bytes, hi = lo + b.size();
    for (const BlobSegment& seg : l.plan.segments) {
      const uint64_t s = std::max(lo, seg.blob_offset);
      const uint64_t e = std::min(hi, seg.blob_offset + seg.bytes);
      if (s >= e) continue;
      uploaded_any_ = true;
      AUXSTORE_RETURN_IF_ERROR(core_.gpu.CopyH2DAsync(b.subspan(s - lo, e - s), seg.device,
                                                      seg.device_offset + (s - seg.blob_offset),
                                                      stream_));
    }
    return Status::Ok();
  }

  // The last lane to stop completes the restore: commits it, or reports the
  // first failure once every upload any lane enqueued is on the stream.
  void EndLane() {
    bool last = false, failed = false;
    {
      std::lock_guard lock(mu_);
      last = --lanes_running_ == 0;
      failed = failed_;
    }
    if (!last) return;
    if (!failed) return Commit();
    Complete();
  }

  bool failed() {
    std::lock_guard lock(mu_);
    return failed_;
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

  // Records the first failure (later ones are dropped) and returns buffers
  // kept from validation. Outside the stream phase it completes the restore
  // at once; while lanes run, the last lane to stop does (EndLane).
  void Fail(Status st, bool quarantine = false) {
    bool complete_now = false;
    {
      std::lock_guard lock(mu_);
      if (failed_) return;
      failed_ = true;
      error_ = st;
      for (Layer& l : layers_) {
        if (!l.kept) continue;
        core_.staging->EndHold();
        core_.staging->Release(*l.kept);
        l.kept.reset();
      }
      complete_now = lanes_running_ == 0;
    }
    // Only what this pipeline itself found; a store read that failed with
    // Corruption has quarantined the snapshot already.
    if (quarantine) (void)core_.store.Quarantine(ns_, prefix_, st);
    if (complete_now) Complete();
  }

  void Complete() {
    Status st;
    bool after_stream = false;
    {
      std::lock_guard lock(mu_);
      st = error_;
      after_stream = uploaded_any_;
    }
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

  // Counts the restore before the completion runs (whoever sees it sees the
  // count), and stops counting it as running only after (the pipeline's
  // destructor waits for running restores).
  void Finish(Status st) {
    {
      std::lock_guard lock(core_.mu);
      ++(st.ok() ? core_.stats.restores_ok : core_.stats.restores_failed);
    }
    RestoreCallback done = std::move(done_);
    done(std::move(st));
    std::lock_guard lock(core_.mu);
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
  std::vector<Layer> layers_;  // fixed after Prepare; each streamed by one lane

  // Shared by the lanes.
  std::mutex mu_;
  bool failed_ = false;
  Status error_;                           // the first failure
  std::atomic<bool> uploaded_any_{false};  // set by lanes, read by Complete
  size_t next_layer_ = 0;                  // next layer a lane takes
  size_t lanes_running_ = 0;
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
