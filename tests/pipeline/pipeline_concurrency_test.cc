// Many restores and snapshots at once, from many engine threads and streams,
// through small staging and a small snapshot queue.
#include <gtest/gtest.h>

#include <thread>

#include "tests/pipeline/pipeline_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::Sequence;

class PipelineConcurrencyTest : public testing::PipelineFixture {};

TEST_F(PipelineConcurrencyTest, ManyConcurrentRestoresAndSnapshots) {
  PipelineOptions o;
  o.staging_buffers = 4;
  o.staging_bytes = 4096;
  o.io_threads = 3;
  o.snapshot_queue = 3;
  o.snapshot_bytes = 512 * 1024;
  auto p = MakePipeline(o);
  constexpr int kThreads = 6, kRounds = 4;
  std::atomic<int> accepted{0}, shed{0}, restored{0};

  // Round r of thread t snapshots sequence (t, r), then restores the
  // snapshot of round r-1 while other threads snapshot.
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto stream = gpu_.CreateStream();
      ASSERT_TRUE(stream.ok());
      std::vector<std::pair<Prefix, Sequence>> kept;
      for (int r = 0; r < kRounds; ++r) {
        const uint64_t seed = 1000 + t * 100 + r;
        Sequence src = Filled(seed, 100 + 37 * r + t);
        const Prefix prefix = PrefixFromSeed(seed);
        Status st;
        for (;;) {  // the engine would drop it; the test retries to get data
          st = p->Snapshot(ns_, prefix, 1, src.sources(), *stream);
          if (st.code() != StatusCode::kCapacity) break;
          ++shed;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ASSERT_TRUE(st.ok()) << st.ToString();
        ++accepted;
        // The sources must stay unchanged until the stream passed the copies.
        ASSERT_TRUE(gpu_.Synchronize(*stream).ok());
        kept.emplace_back(prefix, std::move(src));
        if (r > 0) {
          auto& [prev_prefix, prev_src] = kept[r - 1];
          // The write-behind may still be running: wait for it to be visible.
          while (!store_->GetManifest(ns_, prev_prefix).ok()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          Sequence dst = Fresh();
          Status rs = p->Restore(ns_, prev_prefix, dst.targets(), *stream).get();
          ASSERT_TRUE(rs.ok()) << rs.ToString();
          ExpectSame(prev_src, dst);
          ++restored;
        }
      }
      EXPECT_TRUE(gpu_.DestroyStream(*stream).ok());
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(p->Flush().ok());
  EXPECT_EQ(accepted.load(), kThreads * kRounds);
  EXPECT_EQ(restored.load(), kThreads * (kRounds - 1));
  auto s = p->stats();
  EXPECT_EQ(s.snapshots_written, uint64_t(kThreads * kRounds));
  EXPECT_EQ(s.snapshots_shed, uint64_t(shed.load()));
  EXPECT_EQ(s.restores_ok, uint64_t(kThreads * (kRounds - 1)));
  EXPECT_EQ(s.restores_failed, 0u);
  EXPECT_EQ(host_.pinned_misuse_count(), 0u);
}

// Restores of one snapshot into many sequences at once, all bit-exact.
TEST_F(PipelineConcurrencyTest, ParallelRestoresOfOneSnapshot) {
  auto p = MakePipeline();
  Sequence src = Filled(77);
  ASSERT_TRUE(p->Snapshot(ns_, PrefixFromSeed(77), 1, src.sources(), stream_).ok());
  ASSERT_TRUE(p->Flush().ok());
  std::vector<Sequence> dsts;
  std::vector<std::future<Status>> futures;
  for (int i = 0; i < 12; ++i) dsts.push_back(Fresh());
  for (auto& d : dsts) futures.push_back(p->Restore(ns_, PrefixFromSeed(77), d.targets(), stream_));
  for (auto& f : futures) ASSERT_TRUE(f.get().ok());
  for (auto& d : dsts) ExpectSame(src, d);
}

// The same through two staging buffers with more reads ahead than buffers:
// chunk 0 holds and in-order acquisition must keep every restore moving.
TEST_F(PipelineConcurrencyTest, ParallelRestoresThroughTwoBuffersDoNotDeadlock) {
  PipelineOptions o;
  o.staging_buffers = 2;
  o.staging_bytes = 4096;
  o.io_threads = 3;
  o.restore_read_ahead = 3;
  o.snapshot_queue = 2;
  o.snapshot_bytes = 1 << 20;
  auto p = MakePipeline(o);
  Sequence src = Filled(78);
  ASSERT_TRUE(p->Snapshot(ns_, PrefixFromSeed(78), 1, src.sources(), stream_).ok());
  ASSERT_TRUE(p->Flush().ok());
  std::vector<Sequence> dsts;
  std::vector<std::future<Status>> futures;
  for (int i = 0; i < 8; ++i) dsts.push_back(Fresh());
  for (auto& d : dsts) futures.push_back(p->Restore(ns_, PrefixFromSeed(78), d.targets(), stream_));
  for (auto& f : futures) ASSERT_TRUE(f.get().ok());
  for (auto& d : dsts) ExpectSame(src, d);
  EXPECT_GT(p->stats().staging_waits, 0u);
}

}  // namespace
}  // namespace auxstore
