// RestoreHandle: layer-wise completion, device events the engine's stream
// waits on, cancel, leases released at completion, the pipeline's own
// stream (never the legacy default one), engine-owned buffers, and Asio
// completion tokens.
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "auxstore/asio_restore.h"
#include "tests/pipeline/pipeline_fixture.h"

namespace auxstore {
namespace {

using namespace std::chrono_literals;
using testing::PrefixFromSeed;

class RestoreHandleTest : public testing::PipelineFixture {
 protected:
  void Put(const Prefix& prefix, const testing::Sequence& src, GpuPipeline& p) {
    ASSERT_TRUE(p.Snapshot(ns_, prefix, 301, src.sources(), stream_).ok());
    ASSERT_TRUE(p.Flush().ok());
  }
};

TEST_F(RestoreHandleTest, LayersCompleteOneByOneBeforeTheRestore) {
  auto p = MakePipeline();
  auto src = Filled(1);
  Put(PrefixFromSeed(1), src, *p);
  auto dst = Fresh();
  store_->HoldLayer(1);  // the DSA layer (several chunks) cannot stream past chunk 0
  std::vector<uint32_t> seen;
  std::mutex seen_mu;
  RestoreOptions o;
  o.on_layer = [&](uint32_t layer) {
    std::lock_guard l(seen_mu);
    seen.push_back(layer);
  };
  auto h = p->StartRestore(ns_, PrefixFromSeed(1), dst.targets(), o);
  ASSERT_TRUE(h->WaitLayer(0).ok());
  ASSERT_TRUE(h->WaitLayer(2).ok());
  ASSERT_TRUE(h->WaitLayer(5).ok());
  EXPECT_TRUE(h->LayerDone(0));
  EXPECT_FALSE(h->done()) << "layer 1 is still held";
  EXPECT_FALSE(h->LayerDone(1));
  EXPECT_TRUE(dst.all_fresh()) << "counters move only when the whole restore commits";
  EXPECT_EQ(h->LayerEvent(1).status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(h->WaitLayer(9).IsNotFound());
  store_->ReleaseHeldLayer();
  ASSERT_TRUE(h->Wait().ok());
  EXPECT_EQ(h->LayersDone(), (std::vector<uint32_t>{0, 1, 2, 5}));
  {
    std::lock_guard l(seen_mu);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<uint32_t>{0, 1, 2, 5}));
  }
  ExpectSame(src, dst);
}

TEST_F(RestoreHandleTest, TheEnginesStreamWaitsOnTheLayerEventWithoutTheHost) {
  auto p = MakePipeline();
  auto src = Filled(2);
  Put(PrefixFromSeed(2), src, *p);
  auto dst = Fresh();
  auto engine = gpu_.CreateStream();
  ASSERT_TRUE(engine.ok());
  // The restore's stream is slow: the engine's stream must not run ahead.
  ASSERT_TRUE(host_.SetStreamDelay(p->stream(), 2ms).ok());
  auto h = p->StartRestore(ns_, PrefixFromSeed(2), dst.targets());
  ASSERT_TRUE(h->StreamWaitLayer(0, *engine).ok());
  // Work the engine enqueues after the wait sees layer 0's bytes: a copy
  // back from the target's raw keys, on the engine's stream.
  auto* qsa = static_cast<QsaSeqState*>(dst.layers.at(0).get());
  std::vector<uint8_t> seen(301 * 64 * 2);
  ASSERT_TRUE(gpu_.CopyD2HAsync(qsa->raw_keys(), 0, seen, *engine).ok());
  ASSERT_TRUE(gpu_.Synchronize(*engine).ok());
  auto want = src.layers.at(0)->Snapshot(kDefaultStream);
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(std::equal(seen.begin(), seen.end(), want->begin() + 16))
      << "the engine's stream ran before layer 0 was on the device";
  EXPECT_TRUE(h->LayerEvent(0).ok());
  ASSERT_TRUE(h->StreamWaitAll(*engine).ok());
  ASSERT_TRUE(gpu_.Synchronize(*engine).ok());
  ASSERT_TRUE(h->Wait().ok());
  ASSERT_TRUE(host_.SetStreamDelay(p->stream(), 0us).ok());
  ExpectSame(src, dst);
  ASSERT_TRUE(gpu_.DestroyStream(*engine).ok());
}

TEST_F(RestoreHandleTest, ACancelledRestoreMovesNoCounterAndSaysWhichLayersLanded) {
  auto p = MakePipeline();
  auto src = Filled(3);
  Put(PrefixFromSeed(3), src, *p);
  auto dst = Fresh();
  store_->HoldLayer(1);
  auto h = p->StartRestore(ns_, PrefixFromSeed(3), dst.targets());
  ASSERT_TRUE(h->WaitLayer(0).ok());
  h->Cancel();
  store_->ReleaseHeldLayer();
  Status st = h->Wait();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("cancelled"), std::string::npos);
  EXPECT_TRUE(dst.all_fresh());
  const auto landed = h->LayersDone();
  EXPECT_TRUE(std::find(landed.begin(), landed.end(), 0u) != landed.end());
  EXPECT_TRUE(std::find(landed.begin(), landed.end(), 1u) == landed.end());
  EXPECT_TRUE(h->WaitLayer(1).code() == StatusCode::kUnavailable);
  EXPECT_EQ(p->stats().restores_cancelled, 1u);
  // The snapshot is intact: a fresh restore gets it all.
  auto again = Fresh();
  ASSERT_TRUE(p->StartRestore(ns_, PrefixFromSeed(3), again.targets())->Wait().ok());
  ExpectSame(src, again);
}

TEST_F(RestoreHandleTest, ALeaseIsReleasedWhenTheRestoreCompletes) {
  auto p = MakePipeline();
  auto src = Filled(4);
  Put(PrefixFromSeed(4), src, *p);
  auto lease = store_->AcquireLease(ns_, PrefixFromSeed(4), kDefaultLeaseMs);
  ASSERT_TRUE(lease.ok());
  auto dst = Fresh();
  RestoreOptions o;
  o.lease = *lease;
  ASSERT_TRUE(p->StartRestore(ns_, PrefixFromSeed(4), dst.targets(), o)->Wait().ok());
  EXPECT_TRUE(store_->ReleaseLease(*lease).IsNotFound()) << "the restore released it";
  // Also when the restore fails.
  auto lease2 = store_->AcquireLease(ns_, PrefixFromSeed(4), kDefaultLeaseMs);
  o.lease = *lease2;
  EXPECT_FALSE(p->StartRestore(ns_, PrefixFromSeed(4), dst.targets(), o)->Wait().ok());
  EXPECT_TRUE(store_->ReleaseLease(*lease2).IsNotFound());
}

TEST_F(RestoreHandleTest, NeverTheLegacyDefaultStream) {
  auto p = MakePipeline();
  EXPECT_NE(p->stream(), kDefaultStream);
  auto src = Filled(5);
  Put(PrefixFromSeed(5), src, *p);
  auto dst = Fresh();
  RestoreOptions o;
  o.stream = kDefaultStream;
  Status st = p->StartRestore(ns_, PrefixFromSeed(5), dst.targets(), o)->Wait();
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_TRUE(dst.all_fresh());
  // The old entry point's 0 means "the pipeline's own stream".
  ASSERT_TRUE(p->Restore(ns_, PrefixFromSeed(5), dst.targets(), kDefaultStream).get().ok());
}

TEST_F(RestoreHandleTest, EngineOwnedBuffersRestoreAndSnapshotWriteBehind) {
  auto p = MakePipeline();
  auto src = Filled(6);
  // The engine's own buffers (device memory from the backend, as cudaMalloc
  // would give it) with states borrowing them.
  const QsaGeometry& g = layer_.geometry;
  QsaSeqState::Buffers qb;
  qb.raw_keys_bytes = uint64_t{g.max_tokens} * g.hd * 2;
  qb.block_keys_bytes = uint64_t{g.max_tokens / g.ratio} * g.hd * 2;
  qb.raw_keys = *gpu_.Alloc(qb.raw_keys_bytes);
  qb.block_keys = *gpu_.Alloc(qb.block_keys_bytes);
  // Snapshot from the engine's state (its counters handed over).
  auto* filled = static_cast<QsaSeqState*>(src.layers.at(0).get());
  ASSERT_TRUE(gpu_.Synchronize(kDefaultStream).ok());
  std::vector<uint8_t> raw(filled->ingested() * g.hd * 2);
  ASSERT_TRUE(gpu_.CopyD2HOnStream(filled->raw_keys(), 0, raw, kDefaultStream).ok());
  ASSERT_TRUE(gpu_.CopyH2DAsync(raw, qb.raw_keys, 0, stream_).ok());
  ASSERT_TRUE(gpu_.Synchronize(stream_).ok());
  {
    auto engine = QsaSeqState::Borrow(gpu_, layer_, qb, filled->ingested(), 0);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    SnapshotSources s{{0, engine->get()}};
    ASSERT_TRUE(p->Snapshot(ns_, PrefixFromSeed(6), 301, s, stream_).ok());
    ASSERT_TRUE(p->Flush().ok());
  }
  // Restore into fresh engine buffers.
  QsaSeqState::Buffers fresh = qb;
  fresh.raw_keys = *gpu_.Alloc(qb.raw_keys_bytes);
  fresh.block_keys = *gpu_.Alloc(qb.block_keys_bytes);
  {
    auto target = QsaSeqState::Borrow(gpu_, layer_, fresh);
    ASSERT_TRUE(target.ok());
    ASSERT_TRUE(p->StartRestore(ns_, PrefixFromSeed(6), {{0, target->get()}})->Wait().ok());
    EXPECT_EQ((*target)->ingested(), filled->ingested());
    std::vector<uint8_t> back(raw.size());
    ASSERT_TRUE(gpu_.CopyD2HOnStream(fresh.raw_keys, 0, back, stream_).ok());
    EXPECT_EQ(back, raw);
  }
  for (DevicePtr d : {qb.raw_keys, qb.block_keys, fresh.raw_keys, fresh.block_keys}) {
    EXPECT_TRUE(gpu_.Free(d).ok()) << "the engine's buffers are still the engine's";
  }
}

TEST_F(RestoreHandleTest, CompletionTokensFutureAndExecutor) {
  auto p = MakePipeline();
  auto src = Filled(7);
  Put(PrefixFromSeed(7), src, *p);
  auto dst = Fresh();
  std::future<Status> f =
      async_restore(*p, ns_, PrefixFromSeed(7), dst.targets(), {}, boost::asio::use_future);
  ASSERT_TRUE(f.get().ok());
  ExpectSame(src, dst);
  // A handler bound to an executor runs there.
  boost::asio::io_context io;
  auto dst2 = Fresh();
  std::thread::id ran_on;
  Status got = Status::Internal("not run");
  async_restore(*p, ns_, PrefixFromSeed(7), dst2.targets(), {},
                boost::asio::bind_executor(io, [&](Status st) {
                  ran_on = std::this_thread::get_id();
                  got = st;
                }));
  io.run();  // returns once the handler ran (the work guard kept it alive)
  EXPECT_TRUE(got.ok()) << got.ToString();
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST_F(RestoreHandleTest, StatsCountBytesAndLatency) {
  auto p = MakePipeline();
  auto src = Filled(8);
  Put(PrefixFromSeed(8), src, *p);
  auto dst = Fresh();
  ASSERT_TRUE(p->StartRestore(ns_, PrefixFromSeed(8), dst.targets())->Wait().ok());
  const PipelineStats s = p->stats();
  EXPECT_EQ(s.restores_ok, 1u);
  EXPECT_GT(s.bytes_restored, 5000u);
  EXPECT_GT(s.bytes_snapshotted, 5000u);
  uint64_t n = 0;
  for (uint64_t c : s.restore_latency_us) n += c;
  EXPECT_EQ(n, 1u);
  EXPECT_GT(s.restore_latency_us_sum, 0u);
}

}  // namespace
}  // namespace auxstore
