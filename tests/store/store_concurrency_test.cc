// Store: many threads at once; readers never see part of a snapshot.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::RandomBytes;
using testing::StoreFixture;

using StoreConcurrencyTest = StoreFixture;

TEST_F(StoreConcurrencyTest, ReadersRacingWritersNeverSeeAPartialSnapshot) {
  constexpr int kWriters = 3, kPerWriter = 12, kLayers = 6;
  std::atomic<bool> done{false};
  std::atomic<int> observed{0}, partial{0}, wrong{0};
  auto layer_bytes = [](int snap, int layer) {
    return RandomBytes(30000 + 20000 * layer + snap, snap * 100 + layer);
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        const int snap = w * kPerWriter + i;
        std::vector<std::vector<uint8_t>> blobs;
        std::vector<LayerBlob> layers;
        for (int l = 0; l < kLayers; ++l) blobs.push_back(layer_bytes(snap, l));
        for (int l = 0; l < kLayers; ++l)
          layers.push_back({static_cast<uint32_t>(l), Kind::kOpaque, blobs[l]});
        EXPECT_TRUE(store_->PutSnapshot(ns_, PrefixFromSeed(snap), snap, layers).ok());
      }
    });
  }
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      int snap = r;
      while (!done) {
        snap = (snap + 7) % (kWriters * kPerWriter);
        auto m = store_->GetManifest(ns_, PrefixFromSeed(snap));
        if (!m.ok()) continue;
        ++observed;
        if (m->layers.size() != kLayers) ++partial;
        for (int l = 0; l < kLayers; ++l) {
          auto blob = store_->GetLayer(ns_, PrefixFromSeed(snap), l);
          if (!blob.ok()) {
            ++partial;
          } else if (*blob != layer_bytes(snap, l)) {
            ++wrong;
          }
        }
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  done = true;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_GT(observed.load(), 0);
  EXPECT_EQ(partial.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(store_->Stats().snapshots, uint64_t{kWriters * kPerWriter});
}

// Reads into caller memory of multi-MiB snapshots, each copied by four
// lanes that all callers share (helpers start late, or never, when the
// lanes' pool is busy), beside a writer that erases snapshots and puts them
// again with other bytes: every read is one whole version or NotFound,
// nothing is quarantined.
TEST_F(StoreConcurrencyTest, ReadersCopyingInLanesBesideAnEraseAndPutWriterSeeWholeVersions) {
  options_.chunk_bytes = 1u << 20;
  options_.read_lanes = 4;
  options_.background_maintenance = false;
  Reopen();
  constexpr int kSnapshots = 3, kLayers = 4, kRounds = 6;
  auto layer_bytes = [](int snap, int version, int layer) {
    return RandomBytes((1u << 20) + 4096 * layer + 13 * snap, snap * 1000 + version * 10 + layer);
  };
  auto put = [&](int snap, int version) {
    std::vector<std::vector<uint8_t>> blobs;
    std::vector<LayerBlob> layers;
    for (int l = 0; l < kLayers; ++l) blobs.push_back(layer_bytes(snap, version, l));
    for (int l = 0; l < kLayers; ++l) {
      layers.push_back({static_cast<uint32_t>(l), Kind::kOpaque, blobs[l]});
    }
    return store_->PutSnapshot(ns_, PrefixFromSeed(snap), 1, layers);
  };
  for (int s = 0; s < kSnapshots; ++s) ASSERT_TRUE(put(s, 0).ok());
  std::atomic<bool> done{false};
  std::atomic<int> whole{0}, not_found{0}, wrong{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int round = 1; round <= kRounds; ++round) {
      for (int s = 0; s < kSnapshots; ++s) {
        EXPECT_TRUE(store_->Erase(ns_, PrefixFromSeed(s)).ok());
        EXPECT_TRUE(put(s, round % 2).ok());
      }
    }
    done = true;
  });
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      std::vector<std::vector<uint8_t>> room(kLayers, std::vector<uint8_t>(2u << 20));
      for (int i = r; !done || whole.load() < 3; ++i) {
        const int snap = i % kSnapshots;
        std::vector<Store::LayerInto> layers;
        for (int l = 0; l < kLayers; ++l) layers.push_back({static_cast<uint32_t>(l), room[l]});
        const Status st = store_->ReadLayersInto(ns_, PrefixFromSeed(snap), layers);
        if (st.IsNotFound()) {
          ++not_found;
          continue;
        }
        if (!st.ok()) {
          ADD_FAILURE() << st.ToString();
          ++wrong;
          break;
        }
        bool v[2] = {true, true};
        for (int version = 0; version < 2; ++version) {
          for (int l = 0; l < kLayers; ++l) {
            const auto want = layer_bytes(snap, version, l);
            v[version] = v[version] && layers[l].bytes == want.size() &&
                         std::equal(want.begin(), want.end(), room[l].begin());
          }
        }
        if (v[0] || v[1]) {
          ++whole;
        } else {
          ++wrong;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  RecordProperty("whole_reads", whole.load());
  RecordProperty("reads_that_met_an_erase", not_found.load());
  EXPECT_GT(whole.load(), 0);
  EXPECT_EQ(wrong.load(), 0) << "a read mixed versions or returned wrong bytes";
  EXPECT_EQ(store_->Stats().quarantines, 0u) << not_found.load() << " reads met an erase";
}

TEST_F(StoreConcurrencyTest, ConcurrentPutsOfOnePrefixWriteItOnce) {
  auto blob = RandomBytes(2u << 20, 5);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      LayerBlob l{0, Kind::kOpaque, blob};
      EXPECT_TRUE(store_->PutSnapshot(ns_, PrefixFromSeed(1), 1, {&l, 1}).ok());
    });
  }
  for (auto& t : threads) t.join();
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.puts, 1u);
  EXPECT_EQ(s.duplicate_puts, 3u);
  EXPECT_EQ(*store_->GetLayer(ns_, PrefixFromSeed(1), 0), blob);
}

TEST_F(StoreConcurrencyTest, EraseLookupAndPutInterleaveSafely) {
  std::atomic<bool> stop{false};
  std::thread eraser([&] {
    for (int i = 0; i < 200; ++i) (void)store_->Erase(ns_, PrefixFromSeed(i % 10));
    stop = true;
  });
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) PutOpaque(PrefixFromSeed(i % 10), 5000, i % 10);
  });
  std::thread reader([&] {
    std::vector<Prefix> cands;
    for (int i = 0; i < 10; ++i) cands.push_back(PrefixFromSeed(i));
    while (!stop) {
      auto r = store_->LongestPrefix(ns_, cands);
      ASSERT_TRUE(r.ok());
      if (r->has_value()) {
        auto b = store_->GetLayer(ns_, cands[**r], 0);
        EXPECT_TRUE(b.ok() || b.status().IsNotFound()) << b.status().ToString();
      }
    }
  });
  eraser.join();
  writer.join();
  reader.join();
  EXPECT_FALSE(store_->Stats().fenced);
  EXPECT_EQ(store_->Stats().quarantines, 0u) << "a race with a writer is not corruption";
}

}  // namespace
}  // namespace auxstore
