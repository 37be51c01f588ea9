// Restore and snapshot pipelines against a real store on the host backend.
#include <gtest/gtest.h>

#include <thread>
#include <utility>

#include "tests/pipeline/pipeline_fixture.h"

namespace auxstore {
namespace {

using testing::PipelineFixture;
using testing::PrefixFromSeed;
using testing::Sequence;

class PipelineTest : public PipelineFixture {
 protected:
  // Snapshots `src` under `prefix` through the pipeline and waits for it.
  void Put(GpuPipeline& p, const Sequence& src, const Prefix& prefix) {
    ASSERT_TRUE(p.Snapshot(ns_, prefix, 301, src.sources(), stream_).ok());
    ASSERT_TRUE(p.Flush().ok());
  }
};

TEST_F(PipelineTest, SnapshotThenRestoreIsBitExactIncludingRepool) {
  auto p = MakePipeline();
  Sequence src = Filled(1);
  const Prefix prefix = PrefixFromSeed(1);
  Put(*p, src, prefix);
  auto m = store_->GetManifest(ns_, prefix);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->layers.size(), 4u);
  EXPECT_GT(m->layers[0].bytes / m->chunk_bytes, 5u) << "QSA layer spans many chunks";

  Sequence dst = Fresh();
  Status st = p->Restore(ns_, prefix, dst.targets(), stream_).get();
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectSame(src, dst);
  EXPECT_EQ(static_cast<QsaSeqState&>(*dst.layers[0]).pooled(), 301u / 8);
  auto stats = p->stats();
  EXPECT_EQ(stats.restores_ok, 1u);
  EXPECT_EQ(stats.snapshots_written, 1u);
  EXPECT_GT(stats.staging_waits, 0u) << "3 staging buffers bound a multi-chunk restore";
}

TEST_F(PipelineTest, ChainedWriteBehindSnapshotsShareTheirCommonQsaPages) {
  // Two turns of one sequence: Filled() draws the QSA rows first, so the
  // first 128 rows of the 256-token turn are the 128-token turn's.
  auto p = MakePipeline();
  std::vector<uint32_t> tokens(256);
  for (uint32_t t = 0; t < 256; ++t) tokens[t] = 7 + t;
  const auto chain = PrefixHashes(tokens, 16, 0);
  Sequence first = Filled(3, 128), second = Filled(3, 256);
  const Prefix a = chain[7], b = chain[15];
  SnapshotOptions oa;
  oa.block_chain.assign(chain.begin(), chain.begin() + 8);
  oa.block_size = 16;
  ASSERT_TRUE(p->Snapshot(ns_, a, 128, first.sources(), stream_, oa).ok());
  ASSERT_TRUE(p->Flush().ok());
  SnapshotOptions ob;
  ob.block_chain = chain;
  ob.block_size = 16;
  ASSERT_TRUE(p->Snapshot(ns_, b, 256, second.sources(), stream_, ob).ok());
  ASSERT_TRUE(p->Flush().ok());
  const Manifest ma = store_->GetManifest(ns_, a).value(), mb = store_->GetManifest(ns_, b).value();
  const LayerEntry* qsa = mb.FindLayer(0);
  ASSERT_NE(qsa, nullptr);
  ASSERT_EQ(qsa->runs.size(), 2u);
  EXPECT_EQ(qsa->runs[0].owner, ma.put_id) << "pages 0-7 come from the first turn";
  EXPECT_EQ(qsa->runs[0].pages, 8u);
  EXPECT_EQ(qsa->runs[1].owner, mb.put_id);
  EXPECT_LT(store_->Stats().unique_bytes, store_->Stats().payload_bytes);
  Sequence dst = Fresh();
  Status st = p->Restore(ns_, b, dst.targets(), stream_).get();
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectSame(second, dst);

  // A chain the store would refuse is refused before anything is enqueued.
  SnapshotOptions bad;
  bad.block_chain = chain;
  EXPECT_TRUE(
      p->Snapshot(ns_, PrefixFromSeed(9), 256, second.sources(), stream_, bad).IsInvalidArgument());
  bad.block_size = 16;
  EXPECT_TRUE(
      p->Snapshot(ns_, PrefixFromSeed(9), 200, second.sources(), stream_, bad).IsInvalidArgument());
  EXPECT_EQ(p->stats().snapshots_written, 2u);
}

TEST_F(PipelineTest, RestoreCallbackForm) {
  auto p = MakePipeline();
  Sequence src = Filled(2);
  Put(*p, src, PrefixFromSeed(2));
  Sequence dst = Fresh();
  std::promise<Status> done;
  p->Restore(ns_, PrefixFromSeed(2), dst.targets(), stream_,
             [&](Status s) { done.set_value(std::move(s)); });
  ASSERT_TRUE(done.get_future().get().ok());
  ExpectSame(src, dst);
}

TEST_F(PipelineTest, EveryHeaderIsCheckedBeforeAnyUpload) {
  auto p = MakePipeline();
  Sequence src = Filled(3);
  Put(*p, src, PrefixFromSeed(3));
  // The DSA target holds fewer rows than the snapshot: layer 1 fails its
  // check, so layer 0 (valid, checked first) must not have been uploaded.
  Sequence dst = Fresh();
  auto small = DsaSeqState::Create(gpu_, DsaGeometry{32, 50});
  dst.layers[1] = std::move(*small);
  gpu_.h2d_calls = 0;
  Status st = p->Restore(ns_, PrefixFromSeed(3), dst.targets(), stream_).get();
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.ToString();
  EXPECT_EQ(gpu_.h2d_calls.load(), 0) << "no upload before every header passed";
  EXPECT_TRUE(dst.all_fresh());
  // Nothing was quarantined: a geometry mismatch is not corruption.
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(3)).ok());
}

TEST_F(PipelineTest, RefusalsLeaveEveryCounterUnchanged) {
  auto p = MakePipeline();
  Sequence src = Filled(4);
  const Prefix prefix = PrefixFromSeed(4);
  Put(*p, src, prefix);

  Sequence dst = Fresh();
  EXPECT_TRUE(p->Restore(ns_, PrefixFromSeed(999), dst.targets(), stream_).get().IsNotFound());
  EXPECT_EQ(p->Restore(ns_ + 1, prefix, dst.targets(), stream_).get().code(),
            StatusCode::kNotFound);
  // A layer the snapshot lacks.
  auto extra = OpaqueSeqState::Create(gpu_, 10);
  auto targets = dst.targets();
  targets[77] = extra->get();
  EXPECT_TRUE(p->Restore(ns_, prefix, targets, stream_).get().IsNotFound());
  // Kind mismatch: an opaque target for the QSA layer.
  targets = dst.targets();
  targets[0] = extra->get();
  EXPECT_TRUE(p->Restore(ns_, prefix, targets, stream_).get().IsInvalidArgument());
  // A null target, and no targets.
  targets = dst.targets();
  targets[1] = nullptr;
  EXPECT_TRUE(p->Restore(ns_, prefix, targets, stream_).get().IsInvalidArgument());
  EXPECT_TRUE(p->Restore(ns_, prefix, {}, stream_).get().IsInvalidArgument());
  EXPECT_TRUE(dst.all_fresh());

  // A non-fresh target is refused, and keeps its counters.
  Sequence used = Filled(5);
  Status st = p->Restore(ns_, prefix, used.targets(), stream_).get();
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_EQ(static_cast<QsaSeqState&>(*used.layers[0]).ingested(), 301u);

  // A failing upload and a failing re-pool launch.
  gpu_.h2d_calls = 0;
  gpu_.fail_h2d_at = 3;
  EXPECT_FALSE(p->Restore(ns_, prefix, dst.targets(), stream_).get().ok());
  gpu_.fail_h2d_at = -1;
  EXPECT_TRUE(dst.all_fresh());
  gpu_.fail_pool = true;
  st = p->Restore(ns_, prefix, dst.targets(), stream_).get();
  EXPECT_FALSE(st.ok());
  gpu_.fail_pool = false;
  EXPECT_TRUE(dst.all_fresh()) << "a failed re-pool moves no layer's counter";
  EXPECT_EQ(store_->quarantines.load(), 0);
  // The snapshot is still intact and restorable.
  ASSERT_TRUE(p->Restore(ns_, prefix, dst.targets(), stream_).get().ok());
  ExpectSame(src, dst);
  EXPECT_EQ(p->stats().restores_ok, 1u);
}

TEST_F(PipelineTest, CorruptChunkFailsAndQuarantines) {
  auto p = MakePipeline();
  Sequence src = Filled(6);
  Put(*p, src, PrefixFromSeed(6));
  store_->corrupt_chunk = std::make_pair(0u, 4u);
  Sequence dst = Fresh();
  Status st = p->Restore(ns_, PrefixFromSeed(6), dst.targets(), stream_).get();
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_TRUE(dst.all_fresh());
  EXPECT_EQ(store_->quarantines.load(), 1) << "the store quarantined it; the pipeline adds none";
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(6)).status().IsNotFound());
}

TEST_F(PipelineTest, WholeBlobHashMismatchFailsAndQuarantines) {
  auto p = MakePipeline();
  Sequence src = Filled(7);
  Put(*p, src, PrefixFromSeed(7));
  store_->wrong_hash_layer = 1;  // the DSA layer, after QSA layer 0 streamed fine
  Sequence dst = Fresh();
  Status st = p->Restore(ns_, PrefixFromSeed(7), dst.targets(), stream_).get();
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_TRUE(dst.all_fresh()) << "layer 0 was uploaded but its counters never moved";
  EXPECT_EQ(store_->quarantines.load(), 1);
}

// Lanes stream several layers at once: when one fails, the others may have
// uploads in flight; the completion still comes only after all of them.
TEST_F(PipelineTest, AFailedRestoreCompletesAfterEveryUploadItEnqueued) {
  auto p = MakePipeline();
  Sequence src = Filled(8);
  Put(*p, src, PrefixFromSeed(8));
  ASSERT_TRUE(host_.SetStreamDelay(stream_, std::chrono::milliseconds(2)).ok());
  store_->corrupt_chunk = std::make_pair(0u, 4u);  // mid-blob, while lane 2 streams layer 1
  Sequence dst = Fresh();
  Status st = p->Restore(ns_, PrefixFromSeed(8), dst.targets(), stream_).get();
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_GT(gpu_.h2d_enqueued.load(), 0) << "other layers were uploading";
  EXPECT_EQ(gpu_.h2d_done.load(), gpu_.h2d_enqueued.load());
  EXPECT_TRUE(dst.all_fresh());
  EXPECT_EQ(p->stats().restores_failed, 1u);
}

TEST_F(PipelineTest, SnapshotsAreShedWhenTheQueueIsFull) {
  PipelineOptions o;
  o.staging_buffers = 2;
  o.staging_bytes = 4096;
  o.snapshot_queue = 2;
  o.snapshot_bytes = 1 << 20;
  auto p = MakePipeline(o);
  Sequence src = Filled(8);
  store_->CloseGate();  // the store falls behind
  EXPECT_TRUE(p->Snapshot(ns_, PrefixFromSeed(80), 1, src.sources(), stream_).ok());
  EXPECT_TRUE(p->Snapshot(ns_, PrefixFromSeed(81), 1, src.sources(), stream_).ok());
  // Shedding never blocks: the gate stays closed until after this call, so a
  // Snapshot that waited for room would never return (ctest's timeout).
  Status shed = p->Snapshot(ns_, PrefixFromSeed(82), 1, src.sources(), stream_);
  EXPECT_EQ(shed.code(), StatusCode::kCapacity) << shed.ToString();
  EXPECT_EQ(p->stats().snapshots_shed, 1u);
  store_->OpenGate();
  EXPECT_TRUE(p->Flush().ok());
  auto s = p->stats();
  EXPECT_EQ(s.snapshots_accepted, 2u);
  EXPECT_EQ(s.snapshots_written, 2u);
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(80)).ok());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(82)).status().IsNotFound());
  // The queue is free again.
  EXPECT_TRUE(p->Snapshot(ns_, PrefixFromSeed(83), 1, src.sources(), stream_).ok());
  EXPECT_TRUE(p->Flush().ok());
}

TEST_F(PipelineTest, SnapshotsAreShedWhenThePinnedArenaIsFull) {
  PipelineOptions o;
  o.staging_buffers = 2;
  o.staging_bytes = 4096;
  o.snapshot_queue = 8;
  o.snapshot_bytes = 80 * 1024;  // one snapshot (~57 KB) fits, two do not
  auto p = MakePipeline(o);
  Sequence src = Filled(9);
  store_->CloseGate();
  EXPECT_TRUE(p->Snapshot(ns_, PrefixFromSeed(90), 1, src.sources(), stream_).ok());
  EXPECT_EQ(p->Snapshot(ns_, PrefixFromSeed(91), 1, src.sources(), stream_).code(),
            StatusCode::kCapacity);
  store_->OpenGate();
  EXPECT_TRUE(p->Flush().ok());
  EXPECT_EQ(p->stats().snapshots_shed, 1u);
}

TEST_F(PipelineTest, SnapshotWriteErrorsSurfaceInFlushAndCompletion) {
  auto p = MakePipeline();
  Sequence src = Filled(10);
  // The store fails the write after a valid enqueue.
  store_->put_error = Status::IOError("disk gone");
  std::optional<Status> done;
  SnapshotOptions o;
  o.done = [&](Status st) { done = std::move(st); };
  EXPECT_TRUE(p->Snapshot(ns_, PrefixFromSeed(10), 1, src.sources(), stream_, o).ok());
  Status flushed = p->Flush();
  EXPECT_EQ(flushed.code(), StatusCode::kIOError) << flushed.ToString();
  EXPECT_NE(flushed.message().find(PrefixFromSeed(10).ToHex()), std::string::npos)
      << "the error names the prefix: " << flushed.ToString();
  ASSERT_TRUE(done.has_value()) << "the completion ran before Flush returned";
  EXPECT_EQ(done->code(), StatusCode::kIOError);
  EXPECT_TRUE(p->Flush().ok()) << "reported once";
  EXPECT_EQ(p->stats().snapshots_failed, 1u);
  store_->put_error.reset();
}

// What the write would refuse is refused at enqueue (it was accepted and
// only Flush failed): an unknown namespace, and the legacy default stream
// (refused as restores refuse it). Nothing is enqueued or counted.
TEST_F(PipelineTest, SnapshotValidatesAtEnqueue) {
  auto p = MakePipeline();
  Sequence src = Filled(10);
  Status unknown = p->Snapshot(ns_ ^ 0x5555, PrefixFromSeed(11), 1, src.sources(), stream_);
  EXPECT_TRUE(unknown.IsNotFound()) << unknown.ToString();
  Status legacy = p->Snapshot(ns_, PrefixFromSeed(11), 1, src.sources(), kDefaultStream);
  EXPECT_TRUE(legacy.IsInvalidArgument()) << legacy.ToString();
  EXPECT_TRUE(p->Flush().ok());
  EXPECT_EQ(p->stats().snapshots_accepted, 0u);
  EXPECT_EQ(p->stats().snapshots_failed, 0u);
}

TEST_F(PipelineTest, CreateRefusesZeroSizedOptions) {
  for (int which = 0; which < 3; ++which) {
    PipelineOptions o;
    (which == 0 ? o.io_threads : which == 1 ? o.snapshot_queue : o.restore_read_ahead) = 0;
    auto p = GpuPipeline::Create(*store_, gpu_, o);
    ASSERT_FALSE(p.ok());
    EXPECT_TRUE(p.status().IsInvalidArgument()) << p.status().ToString();
  }
}

// One read ahead or many: the same bytes arrive, and a restore with more
// chunks in flight than staging buffers still completes.
TEST_F(PipelineTest, RestoreIsBitExactForEveryReadAhead) {
  Sequence src = Filled(12);
  {
    auto p = MakePipeline();
    Put(*p, src, PrefixFromSeed(12));
  }
  for (size_t ahead : {1u, 2u, 5u}) {
    PipelineOptions o;
    o.staging_buffers = 2;
    o.staging_bytes = 4096;
    o.restore_read_ahead = ahead;
    auto p = MakePipeline(o);
    Sequence dst = Fresh();
    Status st = p->Restore(ns_, PrefixFromSeed(12), dst.targets(), stream_).get();
    ASSERT_TRUE(st.ok()) << "read ahead " << ahead << ": " << st.ToString();
    ExpectSame(src, dst);
  }
}

// The defaults scale with the host: one lane and I/O thread per two cores,
// 2 to 8; the most they give (8 of each) restores the same bytes on any host.
TEST_F(PipelineTest, LanesAndIoThreadsDefaultToOnePerTwoCoresFromTwoToEight) {
  const std::pair<unsigned, size_t> cores_to_lanes[] = {
      {0, 2}, {1, 2}, {2, 2}, {4, 2}, {5, 2}, {6, 3}, {9, 4}, {16, 8}, {17, 8}, {64, 8}, {1024, 8}};
  for (const auto& [cores, lanes] : cores_to_lanes)
    EXPECT_EQ(DefaultRestoreLanes(cores), lanes) << cores << " cores";
  const PipelineOptions defaults;
  const size_t here = DefaultRestoreLanes(std::thread::hardware_concurrency());
  EXPECT_EQ(defaults.io_threads, here);
  EXPECT_EQ(defaults.restore_read_ahead, here);

  Sequence src = Filled(13);
  {
    auto p = MakePipeline();
    Put(*p, src, PrefixFromSeed(13));
  }
  PipelineOptions o;
  o.io_threads = 8;
  o.restore_read_ahead = 8;
  auto p = MakePipeline(o);
  Sequence dst = Fresh();
  Status st = p->Restore(ns_, PrefixFromSeed(13), dst.targets(), stream_).get();
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectSame(src, dst);
}

TEST_F(PipelineTest, ChunksLargerThanStagingAreRefused) {
  PipelineOptions o;
  o.staging_buffers = 2;
  o.staging_bytes = 1024;  // < the store's 4096-byte chunks
  auto p = MakePipeline(o);
  Sequence src = Filled(11);
  Put(*p, src, PrefixFromSeed(11));
  Sequence dst = Fresh();
  EXPECT_TRUE(
      p->Restore(ns_, PrefixFromSeed(11), dst.targets(), stream_).get().IsInvalidArgument());
  EXPECT_TRUE(dst.all_fresh());
}

}  // namespace
}  // namespace auxstore
