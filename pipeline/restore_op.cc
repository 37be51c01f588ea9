// One restore: Asio handlers over the staging pool, none of which blocks on
// a free buffer, and the RestoreHandle the engine watches it through.
//
//  1. Prepare: manifest, and every target checked (kind, freshness, staging
//     size) and planned from the layer's header, which the manifest holds:
//     nothing is read or uploaded before every layer fits its target. A row
//     range plans only its rows' segments (SeqState::PlanRestoreRows); the
//     layer is still read and verified whole, Upload skips the rest.
//  2. Stream: restore_read_ahead lanes (one per two cores, 2 to 8, by
//     default: DefaultRestoreLanes) run on the Asio pool, each taking the
//     next layer not yet streamed and reading its pieces (its pages from the
//     puts that stored them, then its own rows) in order straight into
//     staging through the store's LayerReader, checked through the layer
//     digest (PieceChecks::kLayerDigest: one hash pass, fused with the
//     copy). Each piece is uploaded as soon as it is staged; the reader
//     yields the last one only after the layer's digest matched, and
//     quarantines damage itself (layer_reader.h). Then the layer's re-pool
//     (QSA) is enqueued, its event recorded, and a host callback marks it
//     done. A lane holds one buffer at a time and waits for the next holding
//     none, so concurrent restores cannot deadlock; a buffer returns once its
//     copy has completed.
//  3. Commit: once every lane is done, every counter set at once, completion
//     after the stream passed the work.
// A failure (or a cancel) at any step moves no counter; the completion of a
// failed restore waits for every lane to stop and for the stream to pass
// whatever was already uploaded.
#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/layer_reader.h"
#include "pipeline/pipeline_core.h"

namespace auxstore::pipeline {

namespace {

namespace asio = boost::asio;
using Lease = StagingPool::Lease;

std::string LayerWhere(uint32_t layer) { return "restore layer " + std::to_string(layer); }

// What the engine holds: completion, per-layer progress and events.
class RestoreState final : public RestoreHandle {
 public:
  RestoreState(GpuBackend& gpu, const RestoreTargets& targets) : gpu_(gpu) {
    for (const auto& [index, target] : targets) layers_.push_back({index});
  }
  ~RestoreState() override {
    for (const LayerProgress& l : layers_) {
      if (l.event) (void)gpu_.DestroyEvent(l.event);
    }
  }

  // Creates one event per layer; an error completes nothing (the caller does).
  Status CreateEvents() {
    for (LayerProgress& l : layers_) {
      AUXSTORE_ASSIGN_OR_RETURN(l.event, gpu_.CreateEvent());
    }
    return Status::Ok();
  }

  bool done() const override {
    std::lock_guard lock(mu_);
    return done_;
  }
  Status Wait() override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return result_;
  }
  void Cancel() override { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  bool LayerDone(uint32_t layer) const override {
    std::lock_guard lock(mu_);
    const LayerProgress* l = Find(layer);
    return l && l->done;
  }
  Status WaitLayer(uint32_t layer) override {
    std::unique_lock lock(mu_);
    const LayerProgress* l = Find(layer);
    if (!l) return Status::NotFound(LayerWhere(layer) + ": not a target of this restore");
    cv_.wait(lock, [&] { return l->done || done_; });
    return l->done ? Status::Ok() : result_;
  }
  Status StreamWaitLayer(uint32_t layer, StreamHandle stream) override {
    EventHandle event = 0;
    {
      std::unique_lock lock(mu_);
      const LayerProgress* l = Find(layer);
      if (!l) return Status::NotFound(LayerWhere(layer) + ": not a target of this restore");
      cv_.wait(lock, [&] { return l->enqueued || done_; });
      if (!l->enqueued) return result_;
      event = l->event;
    }
    return gpu_.StreamWaitEvent(stream, event);
  }
  Status StreamWaitAll(StreamHandle stream) override {
    for (const LayerProgress& l : layers_)
      AUXSTORE_RETURN_IF_ERROR(StreamWaitLayer(l.index, stream));
    return Status::Ok();
  }
  Result<EventHandle> LayerEvent(uint32_t layer) const override {
    std::lock_guard lock(mu_);
    const LayerProgress* l = Find(layer);
    if (!l) return Status::NotFound(LayerWhere(layer) + ": not a target of this restore");
    if (!l->enqueued) return Status::Unavailable(LayerWhere(layer) + ": not enqueued yet");
    return l->event;
  }
  std::vector<uint32_t> LayersDone() const override {
    std::lock_guard lock(mu_);
    std::vector<uint32_t> out;
    for (const LayerProgress& l : layers_)
      if (l.done) out.push_back(l.index);
    return out;
  }

  // ---- the pipeline's side
  EventHandle event(size_t li) const { return layers_[li].event; }
  void MarkEnqueued(size_t li) { Mark(li, &LayerProgress::enqueued); }
  void MarkDone(size_t li) { Mark(li, &LayerProgress::done); }
  void Complete(Status result) {
    {
      std::lock_guard lock(mu_);
      result_ = std::move(result);
      done_ = true;
    }
    cv_.notify_all();
  }

 private:
  struct LayerProgress {
    uint32_t index = 0;
    EventHandle event = 0;
    bool enqueued = false;  // its work is on the stream, its event recorded
    bool done = false;      // that work completed
  };
  const LayerProgress* Find(uint32_t layer) const {
    for (const LayerProgress& l : layers_)
      if (l.index == layer) return &l;
    return nullptr;
  }
  void Mark(size_t li, bool LayerProgress::*flag) {
    {
      std::lock_guard lock(mu_);
      layers_[li].*flag = true;
    }
    cv_.notify_all();
  }

  GpuBackend& gpu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<LayerProgress> layers_;  // ascending layer, as the targets
  bool done_ = false;
  Status result_;
  std::atomic<bool> cancelled_{false};
};

class RestoreOp : public std::enable_shared_from_this<RestoreOp> {
 public:
  RestoreOp(GpuPipeline::Core& core, NamespaceId ns, const Prefix& prefix, RestoreTargets targets,
            const RestoreOptions& options, std::shared_ptr<RestoreState> state,
            RestoreCallback done)
      : core_(core),
        ns_(ns),
        prefix_(prefix),
        targets_(std::move(targets)),
        stream_(options.stream.value_or(core.stream())),
        lease_(options.lease),
        on_layer_(options.on_layer),
        rows_(options.rows),
        state_(std::move(state)),
        done_(std::move(done)),
        start_(std::chrono::steady_clock::now()) {}

  void Start() {
    Status st = Prepare();
    if (!st.ok()) return Fail(st);
    StartStream();
  }
  // Completes a restore that could not start (no lane runs yet).
  void FailBeforeStart(Status st) { Fail(std::move(st)); }

 private:
  struct Layer {
    uint32_t index = 0;
    SeqState* target = nullptr;
    LayerEntry entry;
    RestorePlan plan;
    std::unique_ptr<LayerReader> reader;  // released once the layer streamed
  };

  // ---- 1. prepare ----------------------------------------------------------

  Status Prepare() {
    if (targets_.empty()) return Status::InvalidArgument("restore: no target layers");
    if (stream_ == kDefaultStream) {
      return Status::InvalidArgument(
          "restore: the legacy default stream is not allowed (it serializes against every "
          "blocking stream of the engine); pass the engine's stream or none");
    }
    AUXSTORE_ASSIGN_OR_RETURN(manifest_, core_.store().GetManifest(ns_, prefix_));
    for (auto& [index, target] : targets_) {
      const std::string where = LayerWhere(index);
      if (target == nullptr) return Status::InvalidArgument(where + ": null target");
      if (!rows_ && !target->fresh()) {
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
      Layer& l = layers_.emplace_back();
      l.index = index;
      l.target = target;
      l.entry = *e;
      // A layer that is only a header has its digest checked here (and is
      // quarantined by the reader when it does not match). Pieces are
      // checked through the layer digest alone (one hash pass): a restore
      // commits nothing before its layers' last pieces returned OK.
      auto reader =
          core_.store().OpenLayer(ns_, prefix_, manifest_, index, PieceChecks::kLayerDigest);
      if (!reader.ok()) return reader.status().WithContext(where);
      l.reader = std::move(*reader);
      for (const LayerPiece& piece : l.reader->pieces()) {
        if (piece.bytes > core_.staging().buffer_bytes()) {
          return Status::InvalidArgument(where + ": store chunks of up to " +
                                         std::to_string(piece.bytes) +
                                         " bytes exceed the staging buffers");
        }
      }
      AUXSTORE_RETURN_IF_ERROR(CheckQsaHeadDim(*target, where));
      const size_t head = target->head_bytes();
      if (e->bytes > 0 && head > e->header.size()) {
        return Status::InvalidArgument(where + ": the target needs a " + std::to_string(head) +
                                       "-byte header, the snapshot's layer has " +
                                       std::to_string(e->header.size()));
      }
      const ByteSpan head_bytes = ByteSpan(e->header).first(e->bytes > 0 ? head : 0);
      auto plan = rows_ ? target->PlanRestoreRows(head_bytes, e->bytes, rows_->first, rows_->last)
                        : target->PlanRestore(head_bytes, e->bytes);
      if (!plan.ok()) return plan.status().WithContext(where);
      l.plan = std::move(*plan);
      for (const BlobSegment& seg : l.plan.segments) {
        if (seg.blob_offset < e->header.size()) {  // headers stay on the host
          return Status::Internal(where + ": the target uploads part of the layer's header");
        }
      }
    }
    return Status::Ok();
  }

  // A QSA blob does not carry its head dim: a target of another head dim
  // would see a size mismatch (Corruption). The namespace's geometry says
  // it first, as the DSA header does for DSA: InvalidArgument.
  Status CheckQsaHeadDim(const SeqState& target, const std::string& where) {
    if (target.kind() != Kind::kQsa) return Status::Ok();
    if (!ns_spec_) {
      AUXSTORE_ASSIGN_OR_RETURN(NamespaceSpec spec, core_.store().GetNamespace(ns_));
      ns_spec_ = std::move(spec);
    }
    const uint32_t want = ns_spec_->qsa.hd;
    const uint32_t have = static_cast<const QsaSeqState&>(target).layer().geometry.hd;
    if (want == have) return Status::Ok();
    return Status::InvalidArgument(where + ": the snapshot's QSA rows have head dim " +
                                   std::to_string(want) + ", the target's geometry has " +
                                   std::to_string(have) +
                                   " — the target was made for a different model geometry");
  }

  // ---- 2. stream (one lane per layer in flight) ---------------------------

  void StartStream() {
    const size_t lanes =
        std::min<size_t>(std::max<size_t>(core_.options().restore_read_ahead, 1), layers_.size());
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
    StreamPiece(li);
  }

  void StreamPiece(size_t li) {
    Layer& l = layers_[li];
    if (l.reader->done()) {
      l.reader.reset();  // its iterators go now, not with the restore
      Status st = LayerEnqueued(li);
      if (!st.ok()) {
        Fail(st);
        return EndLane();
      }
      return NextLayer();
    }
    auto self = shared_from_this();
    core_.staging().AsyncAcquire([self, li](Lease b) { self->StagePiece(li, std::move(b)); });
  }

  // Reads the next piece of layer `li` into `b`, uploads it and goes on with
  // the one after.
  void StagePiece(size_t li, Lease b) {
    Layer& l = layers_[li];
    Status st;
    const bool stopped_now = stopped();  // another lane failed, or a cancel
    if (!stopped_now) {
      // Verified, and the last piece only once the layer's digest matched;
      // a Corruption has already quarantined the snapshot (layer_reader.h).
      auto piece = l.reader->ReadInto(b.span());
      if (!piece.ok()) {
        st = piece.status().WithContext(LayerWhere(l.index));
      } else {
        st = Upload(l, piece->blob_offset, ByteSpan{b.data(), piece->bytes});
      }
    }
    Status returned = b.ReturnAfter(stream_);
    if (st.ok()) st = returned;
    if (!st.ok()) Fail(st);
    if (stopped_now && state_->cancelled()) Fail(Cancelled());
    if (!st.ok() || stopped_now) return EndLane();
    StreamPiece(li);
  }

  Status Upload(Layer& l, uint64_t lo, ByteSpan b) {
    const uint64_t hi = lo + b.size();
    for (const BlobSegment& seg : l.plan.segments) {
      const uint64_t s = std::max(lo, seg.blob_offset);
      const uint64_t e = std::min(hi, seg.blob_offset + seg.bytes);
      if (s >= e) continue;
      uploaded_any_ = true;
      AUXSTORE_RETURN_IF_ERROR(core_.gpu().CopyH2DAsync(b.subspan(s - lo, e - s), seg.device,
                                                        seg.device_offset + (s - seg.blob_offset),
                                                        stream_));
    }
    return Status::Ok();
  }

  // Every piece of layer `li` is on the stream: its re-pool, its event, and
  // a host callback that marks it done once the device passed all of it.
  Status LayerEnqueued(size_t li) {
    Layer& l = layers_[li];
    AUXSTORE_RETURN_IF_ERROR(
        l.target->FinishRestore(l.plan, stream_).WithContext(LayerWhere(l.index)));
    uploaded_any_ = true;
    AUXSTORE_RETURN_IF_ERROR(core_.gpu().RecordEvent(state_->event(li), stream_));
    state_->MarkEnqueued(li);
    auto self = shared_from_this();
    return core_.gpu().LaunchHostFunc(stream_, [self, li] {
      self->state_->MarkDone(li);
      if (self->on_layer_) self->on_layer_(self->layers_[li].index);
    });
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

  bool stopped() {
    if (state_->cancelled()) return true;
    std::lock_guard lock(mu_);
    return failed_;
  }
  static Status Cancelled() { return Status::Unavailable("restore cancelled"); }

  // ---- 3. commit -----------------------------------------------------------

  void Commit() {
    if (state_->cancelled()) {  // the last chance: nothing is committed yet
      Fail(Cancelled());
      return Complete();
    }
    for (Layer& l : layers_) l.target->CommitRestore(l.plan);
    FinishAfterStream(Status::Ok());
  }

  // ---- completion ----------------------------------------------------------

  // Records the first failure (later ones are dropped), except that a
  // Corruption replaces a NotFound: the lane whose read found damage
  // quarantines the snapshot inside the store's reader, and another lane
  // may find it gone first (found by pipeline_damage_test). Outside the
  // stream phase it completes the restore at once; while lanes run, the
  // last lane to stop does (EndLane). The pipeline never quarantines: the
  // store's reader decided that already.
  void Fail(Status st) {
    bool complete_now = false;
    {
      std::lock_guard lock(mu_);
      if (failed_) {
        if (st.IsCorruption() && error_.IsNotFound()) error_ = st;
        return;
      }
      failed_ = true;
      error_ = st;
      complete_now = lanes_running_ == 0;
    }
    if (complete_now) Complete();
  }

  void Complete() {
    Status st;
    {
      std::lock_guard lock(mu_);
      st = error_;
    }
    if (uploaded_any_) return FinishAfterStream(std::move(st));
    Finish(std::move(st));
  }

  // Completes once the stream has passed everything enqueued so far.
  void FinishAfterStream(Status st) {
    auto self = shared_from_this();
    Status launched = core_.gpu().LaunchHostFunc(
        stream_, [self, st] { asio::post(self->core_.pool(), [self, st] { self->Finish(st); }); });
    if (launched.ok()) return;
    Status sync = core_.gpu().Synchronize(stream_);
    Finish(st.ok() ? sync : st);
  }

  // Counts the restore, completes the handle, then runs the callback; the
  // pipeline stops counting it as running only after.
  void Finish(Status st) {
    if (lease_) (void)core_.store().ReleaseLease(lease_);
    uint64_t bytes = 0;
    for (const Layer& l : layers_) bytes += l.entry.bytes;
    core_.CountRestore(st, bytes,
                       std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - start_));
    state_->Complete(st);
    if (done_) {
      RestoreCallback done = std::move(done_);
      done(std::move(st));
    }
    core_.EndRestore();
  }

  GpuPipeline::Core& core_;
  const NamespaceId ns_;
  const Prefix prefix_;
  const RestoreTargets targets_;
  const StreamHandle stream_;
  const LeaseId lease_;
  const std::function<void(uint32_t)> on_layer_;
  const std::optional<RestoreOptions::Rows> rows_;
  const std::shared_ptr<RestoreState> state_;
  RestoreCallback done_;
  const std::chrono::steady_clock::time_point start_;
  Manifest manifest_;
  std::optional<NamespaceSpec> ns_spec_;  // looked up for the first QSA target
  std::vector<Layer> layers_;             // fixed after Prepare; each streamed by one lane

  // Shared by the lanes.
  std::mutex mu_;
  bool failed_ = false;
  Status error_;                           // the first failure
  std::atomic<bool> uploaded_any_{false};  // set by lanes, read by Complete
  size_t next_layer_ = 0;                  // next layer a lane takes
  size_t lanes_running_ = 0;
};

}  // namespace

std::shared_ptr<RestoreHandle> StartRestore(GpuPipeline::Core& core, NamespaceId ns,
                                            const Prefix& prefix, RestoreTargets targets,
                                            const RestoreOptions& options, RestoreCallback done) {
  core.BeginRestore();
  auto state = std::make_shared<RestoreState>(core.gpu(), targets);
  Status events = state->CreateEvents();
  auto op = std::make_shared<RestoreOp>(core, ns, prefix, std::move(targets), options, state,
                                        std::move(done));
  if (!events.ok()) {
    asio::post(core.pool(), [op, events] { op->FailBeforeStart(events); });
  } else {
    asio::post(core.pool(), [op] { op->Start(); });
  }
  return state;
}

}  // namespace auxstore::pipeline
