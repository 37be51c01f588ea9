// Compaction's re-layout (CompactOptions::relayout, docs/format.md
// "Re-layout"): the pages of a chain end in one stream that every snapshot
// of the chain reads in order, nothing else of it is kept, and every
// snapshot reads back exactly as before.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include "auxstore/maintenance.h"
#include "tests/store/paged_sequence.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::kBlock;
using testing::Sequence;

class StoreRelayoutTest : public testing::StoreFixture {
 protected:
  // Turns of 16k + 8 tokens: each reads the full pages of the turns before
  // it and stores three pages and 8 tail rows of its own.
  static constexpr uint64_t kTurns[] = {40, 88, 136, 184, 232, 280};
  static constexpr uint64_t kLongest = 280;

  std::vector<std::vector<uint8_t>> Put(const Sequence& seq, const Prefix& prefix, uint64_t n) {
    auto blobs = seq.Blobs(n);
    const std::vector<LayerBlob> layers{{0, Kind::kQsa, blobs[0]}, {1, Kind::kDsa, blobs[1]}};
    const std::vector<Prefix> chain = seq.Chain(n);  // block_chain is a view
    PutOptions o;
    o.block_chain = chain;
    o.block_size = kBlock;
    Status s = store_->PutSnapshot(ns_, prefix, n, layers, o);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return blobs;
  }
  // Puts every turn of `seq` under prefixes PrefixFromSeed(n + salt).
  std::map<uint64_t, std::vector<std::vector<uint8_t>>> PutTurns(const Sequence& seq,
                                                                 uint64_t salt = 0) {
    std::map<uint64_t, std::vector<std::vector<uint8_t>>> turns;
    for (uint64_t n : kTurns) turns[n] = Put(seq, testing::PrefixFromSeed(n + salt), n);
    return turns;
  }
  void ExpectReads(const std::map<uint64_t, std::vector<std::vector<uint8_t>>>& turns,
                   uint64_t salt = 0) {
    for (const auto& [n, blobs] : turns) {
      for (uint32_t layer = 0; layer < blobs.size(); ++layer) {
        auto got = store_->GetLayer(ns_, testing::PrefixFromSeed(n + salt), layer);
        ASSERT_TRUE(got.ok()) << n << " tokens, layer " << layer << ": " << got.status().ToString();
        EXPECT_TRUE(*got == blobs[layer]) << n << " tokens, layer " << layer << " differs";
      }
    }
  }
  // The puts whose pages the snapshot of n tokens reads, layer by layer.
  std::set<PutId> PageOwners(uint64_t n, uint64_t salt = 0) {
    std::set<PutId> owners;
    const Manifest m = store_->GetManifest(ns_, testing::PrefixFromSeed(n + salt)).value();
    for (const LayerEntry& l : m.layers)
      for (const PageRun& r : l.runs) owners.insert(r.owner);
    return owners;
  }
  CompactReport Compact(CompactOptions o = {}) {
    auto r = store_->Compact(o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : CompactReport{};
  }
  void ExpectClean(uint64_t snapshots) {
    auto v = store_->Verify();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_TRUE(v->clean());
    EXPECT_EQ(v->snapshots_ok, snapshots);
    EXPECT_EQ(v->orphan_puts, 0u);
    EXPECT_EQ(v->orphan_records, 0u);
    EXPECT_EQ(v->stale_entries, 0u);
  }

  const Sequence seq_{testing::TestSpec(), 1, 1024};
};

TEST_F(StoreRelayoutTest, CompactLaysAChainOutAsOneStreamThatEveryTurnReads) {
  const auto turns = PutTurns(seq_);
  EXPECT_EQ(PageOwners(kLongest).size(), 6u) << "before: the longest reads six puts' streams";
  const uint64_t unique_before = store_->Stats().unique_bytes;

  const CompactReport r = Compact();
  EXPECT_EQ(r.relaid_snapshots, 6u);
  EXPECT_EQ(r.relayout_skipped, 0u);
  ExpectReads(turns);

  const Manifest longest = store_->GetManifest(ns_, testing::PrefixFromSeed(kLongest)).value();
  for (const LayerEntry& l : longest.layers) {
    ASSERT_EQ(l.runs.size(), 1u) << "layer " << l.layer << ": one run";
    EXPECT_EQ(l.runs[0].owner, longest.put_id) << "its own stream";
    EXPECT_EQ(l.full_pages(), 17u);
  }
  for (uint64_t n : kTurns) {
    EXPECT_EQ(PageOwners(n), std::set<PutId>{longest.put_id}) << n << " tokens";
  }
  // The longest's stream, and each shorter turn's 8 tail rows: the bytes a
  // chain holds do not grow, and every put it read before is reclaimed.
  EXPECT_EQ(store_->Stats().unique_bytes, unique_before);
  EXPECT_EQ(unique_before, seq_.RowBytes(kLongest + 5 * 8));
  ExpectClean(6);

  EXPECT_EQ(Compact().relaid_snapshots, 0u) << "a second compaction moves nothing";

  // The page index names the new stream: a later turn shares its 17 pages.
  const uint64_t written = store_->Stats().bytes_written;
  const auto next = Put(seq_, testing::PrefixFromSeed(328), 328);
  EXPECT_EQ(store_->Stats().bytes_written - written, seq_.RowBytes(328 - 272));
  EXPECT_EQ(PageOwners(328).count(longest.put_id), 1u);

  Close();
  Open();
  ExpectReads(turns);
  ExpectReads({{328, next}});
  ExpectClean(7);
}

TEST_F(StoreRelayoutTest, TwoChainsOfOneNamespaceEachGetTheirOwnStream) {
  const Sequence other(testing::TestSpec(), 77, 1024);
  const auto a = PutTurns(seq_);
  const auto b = PutTurns(other, /*salt=*/1000);
  const CompactReport r = Compact();
  EXPECT_EQ(r.relaid_snapshots, 12u);
  ExpectReads(a);
  ExpectReads(b, 1000);
  const std::set<PutId> base_a = PageOwners(kLongest), base_b = PageOwners(kLongest, 1000);
  ASSERT_EQ(base_a.size(), 1u);
  ASSERT_EQ(base_b.size(), 1u);
  EXPECT_NE(*base_a.begin(), *base_b.begin());
  for (uint64_t n : kTurns) {
    EXPECT_EQ(PageOwners(n), base_a);
    EXPECT_EQ(PageOwners(n, 1000), base_b);
  }
  ExpectClean(12);
}

TEST_F(StoreRelayoutTest, ReadersBesideTheMoveReadTheBytesOrNotFoundNeverDamage) {
  const auto turns = PutTurns(seq_);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> exact{0}, replaced{0}, wrong{0};
  std::vector<std::string> failures;
  std::thread reader([&] {
    while (!stop.load()) {
      for (const auto& [n, blobs] : turns) {
        for (uint32_t layer = 0; layer < blobs.size(); ++layer) {
          auto got = store_->GetLayer(ns_, testing::PrefixFromSeed(n), layer);
          if (got.ok() && *got == blobs[layer]) {
            ++exact;
          } else if (!got.ok() && got.status().IsNotFound()) {
            ++replaced;
          } else {
            ++wrong;
            if (failures.size() < 4)
              failures.push_back(got.ok() ? "other bytes" : got.status().ToString());
          }
        }
      }
    }
  });
  for (int round = 0; round < 6; ++round) {
    // Erase and put the turns again between compactions: each one moves
    // the whole chain under the reader.
    if (round > 0) {
      for (uint64_t n : kTurns) ASSERT_TRUE(store_->Erase(ns_, testing::PrefixFromSeed(n)).ok());
      PutTurns(seq_);
    }
    EXPECT_EQ(Compact().relaid_snapshots, 6u);
  }
  stop = true;
  reader.join();
  EXPECT_EQ(wrong.load(), 0u) << (failures.empty() ? "" : failures[0]);
  EXPECT_GT(exact.load(), 0u);
  EXPECT_EQ(store_->Stats().quarantines, 0u) << "a move is never taken for damage";
  ExpectReads(turns);
  ExpectClean(6);
}

TEST_F(StoreRelayoutTest, ReadsIntoCallerMemoryBesideTheMoveAlwaysHitReadingTheNewLayout) {
  // Nothing is erased: each round puts a fresh chain and compacts, moving
  // it under readers of each call that writes only the caller's
  // memory. Every read is a hit with the exact bytes; a read that met its
  // snapshot moved read it again under the new manifest (reads_repeated).
  // Rounds go on until that happened (a race: it does every few rounds).
  using Turns = std::map<uint64_t, std::vector<std::vector<uint8_t>>>;
  static constexpr const char* kCalls[] = {"ReadLayerInto", "ReadLayersInto", "ReadSnapshotsInto",
                                           "GetLayer", "ReadLayerRows"};
  static_assert(std::string_view(kCalls[3]) == "GetLayer");
  struct Round {
    Turns turns;
    uint64_t salt = 0;
    std::map<uint64_t, std::vector<std::vector<uint8_t>>> rows;  // the middle rows, by turn
  };
  // Rows [rows / 4, rows / 2) of every array of a layer, as a connector's
  // page read asks for them.
  auto middle_rows = [&](const Prefix& p, uint32_t layer, std::vector<uint8_t>& dst) {
    auto all = store_->ReadLayerRows(ns_, p, layer, 0, 0, dst);
    if (!all.ok()) return all.status();
    auto got = store_->ReadLayerRows(ns_, p, layer, all->rows / 4, all->rows / 2, dst);
    if (got.ok()) dst.resize(got->bytes);
    return got.status();
  };
  std::mutex mu;
  std::shared_ptr<const Round> current;
  std::vector<std::string> failures;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> exact{0}, wrong{0};
  auto check = [&](const char* call, uint64_t n, bool ok, const std::string& why) {
    if (ok) {
      ++exact;
      return;
    }
    ++wrong;
    std::lock_guard lock(mu);
    if (failures.size() < 4)
      failures.push_back(std::string(call) + ", " + std::to_string(n) + " tokens: " + why);
  };
  auto read = [&](int call) {
    while (!stop.load()) {
      std::shared_ptr<const Round> round;
      {
        std::lock_guard lock(mu);
        round = current;
      }
      for (const auto& [n, blobs] : round->turns) {
        const Prefix p = testing::PrefixFromSeed(n + round->salt);
        std::vector<std::vector<uint8_t>> got{std::vector<uint8_t>(blobs[0].size()),
                                              std::vector<uint8_t>(blobs[1].size())};
        std::vector<Store::LayerInto> into{{0, got[0]}, {1, got[1]}};
        Status st;
        if (call == 0) {
          for (uint32_t layer = 0; layer < 2 && st.ok(); ++layer)
            st = store_->ReadLayerInto(ns_, p, layer, got[layer]).status();
        } else if (call == 1) {
          st = store_->ReadLayersInto(ns_, p, into);
        } else if (call == 2) {
          std::vector<Store::SnapshotInto> one{{ns_, p, into}};
          store_->ReadSnapshotsInto(one);
          st = into[0].status.ok() ? into[1].status : into[0].status;
        } else if (call == 3) {
          for (uint32_t layer = 0; layer < 2 && st.ok(); ++layer) {
            auto whole = store_->GetLayer(ns_, p, layer);
            st = whole.status();
            if (whole.ok()) got[layer] = std::move(*whole);
          }
        } else {
          for (uint32_t layer = 0; layer < 2 && st.ok(); ++layer)
            st = middle_rows(p, layer, got[layer]);
        }
        const auto& want = call == 4 ? round->rows.at(n) : blobs;
        check(kCalls[call], n, st.ok() && got == want, st.ok() ? "other bytes" : st.ToString());
      }
    }
  };
  auto publish = [&](uint64_t r) {
    auto round = std::make_shared<Round>();
    round->salt = 10000 * (r + 1);
    round->turns = PutTurns(Sequence(testing::TestSpec(), 100 + r, 1024), round->salt);
    for (const auto& [n, blobs] : round->turns) {
      auto& rows = round->rows[n];
      for (uint32_t layer = 0; layer < 2; ++layer) {
        rows.emplace_back(blobs[layer].size());
        EXPECT_TRUE(middle_rows(testing::PrefixFromSeed(n + round->salt), layer, rows.back()).ok());
      }
    }
    std::lock_guard lock(mu);
    current = std::move(round);
  };
  // One call at a time, so that each is seen to read again.
  uint64_t rounds = 0;
  for (int call = 0; call < 5; ++call) {
    const uint64_t before = store_->Stats().reads_repeated;
    publish(rounds++);
    stop = false;
    // Four readers of the call: on two cores their reads are slow enough
    // for a compaction to land between a manifest read and its records.
    std::vector<std::thread> readers;
    for (int i = 0; i < 4; ++i) readers.emplace_back(read, call);
    uint64_t phase = 1;
    for (;; ++phase) {
      EXPECT_EQ(Compact().relaid_snapshots, 6u);
      if (store_->Stats().reads_repeated > before || phase == (call == 3 ? 20 : 150)) break;
      publish(rounds++);
    }
    stop = true;
    for (auto& t : readers) t.join();
    // GetLayer's reads of one layer each, read ahead on the pool, seldom
    // straddle a move (it shares ReadAgainUnder with the others);
    // AStreamedRead... below moves a snapshot under ReadLayer, its stream.
    if (std::string_view(kCalls[call]) != "GetLayer") {
      EXPECT_GT(store_->Stats().reads_repeated, before)
          << kCalls[call] << ": no read met a move in " << phase << " rounds";
    }
  }
  EXPECT_EQ(wrong.load(), 0u) << (failures.empty() ? "" : failures[0]);
  EXPECT_GT(exact.load(), 0u);
  EXPECT_EQ(store_->Stats().quarantines, 0u);
  ExpectClean(6 * rounds);
}

TEST_F(StoreRelayoutTest, AStreamedReadThatMeetsItsSnapshotMovedEndsNotFoundAndDamagesNothing) {
  // ReadLayer's sink cannot take bytes back, so the stream ends; the layer
  // then reads whole under the new layout.
  const auto turns = PutTurns(seq_);
  bool moved = false;
  const Status s =
      store_->ReadLayer(ns_, testing::PrefixFromSeed(kLongest), 0, [&](uint64_t, ByteSpan) {
        if (!moved) {
          moved = true;
          EXPECT_EQ(Compact().relaid_snapshots, 6u);
        }
        return Status::Ok();
      });
  EXPECT_TRUE(moved);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_EQ(store_->Stats().quarantines, 0u);
  EXPECT_EQ(store_->Stats().reads_repeated, 0u);
  ExpectReads(turns);
  ExpectClean(6);
}

TEST_F(StoreRelayoutTest, AChainWithABranchIsLeftAsItIsAndTheStoreNeverGrows) {
  // The trunk's turns, and a branch forked at 136 tokens (its turns read the
  // trunk's first 8 pages and their own after them): laying the family out
  // would need the branch's pages once per turn, so it is left; a linear
  // chain beside it in the same namespace is laid out.
  const auto trunk = PutTurns(seq_);
  const Sequence branch_seq = seq_.Fork(136, 99);
  std::map<uint64_t, std::vector<std::vector<uint8_t>>> branch;
  for (uint64_t n : {184, 232, 280})
    branch[n] = Put(branch_seq, testing::PrefixFromSeed(n + 500), n);
  ASSERT_GT(PageOwners(280, 500).size(), 1u) << "the branch shares the trunk's pages";
  const Sequence other(testing::TestSpec(), 77, 1024);
  const auto linear = PutTurns(other, /*salt=*/1000);
  const uint64_t unique_before = store_->Stats().unique_bytes;
  const std::set<PutId> trunk_owners = PageOwners(kLongest);

  const CompactReport r = Compact();
  EXPECT_EQ(r.relaid_snapshots, 6u) << "the linear chain only";
  EXPECT_EQ(PageOwners(kLongest), trunk_owners);
  EXPECT_EQ(PageOwners(kLongest, 1000).size(), 1u);
  EXPECT_EQ(store_->Stats().unique_bytes, unique_before);
  ExpectReads(trunk);
  ExpectReads(branch, 500);
  ExpectReads(linear, 1000);
  ExpectClean(15);
}

TEST_F(StoreRelayoutTest, AChainThatGrewSinceItsLastCompactionWritesOnlyItsNewPages) {
  auto turns = PutTurns(seq_);
  ASSERT_EQ(Compact().relaid_snapshots, 6u);
  const PutId base = store_->GetManifest(ns_, testing::PrefixFromSeed(kLongest))->put_id;
  // Two more turns: the longest reads the base's 17 pages, the turn before
  // it and its own.
  for (uint64_t n : {328, 376}) turns[n] = Put(seq_, testing::PrefixFromSeed(n), n);
  const CompactReport r = Compact();
  EXPECT_EQ(r.relaid_snapshots, 1u);
  EXPECT_EQ(r.relaid_bytes, seq_.RowBytes(376 - 272)) << "pages 17-22 and the tail, not the chain";
  const Manifest m = store_->GetManifest(ns_, testing::PrefixFromSeed(376)).value();
  for (const LayerEntry& l : m.layers) {
    ASSERT_EQ(l.runs.size(), 2u);
    EXPECT_EQ(l.runs[0].owner, base);
    EXPECT_EQ(l.runs[1].owner, m.put_id);
  }
  ExpectReads(turns);
  ExpectClean(8);
}

TEST_F(StoreRelayoutTest, ALeasedSnapshotKeepsItsLayout) {
  const auto turns = PutTurns(seq_);
  const Prefix longest = testing::PrefixFromSeed(kLongest);
  const Manifest before = store_->GetManifest(ns_, longest).value();
  ASSERT_TRUE(store_->AcquireLease(ns_, longest).ok());
  const CompactReport r = Compact();
  EXPECT_GE(r.relayout_skipped, 1u);
  EXPECT_EQ(store_->GetManifest(ns_, longest)->put_id, before.put_id);
  EXPECT_EQ(PageOwners(kLongest).size(), 6u);
  ExpectReads(turns);
  ExpectClean(6);
}

TEST_F(StoreRelayoutTest, WithRelayoutOffCompactLeavesEveryPageWhereItIs) {
  const auto turns = PutTurns(seq_);
  std::map<uint64_t, PutId> puts;
  for (uint64_t n : kTurns) puts[n] = store_->GetManifest(ns_, testing::PrefixFromSeed(n))->put_id;
  CompactOptions o;
  o.relayout = false;
  const CompactReport r = Compact(o);
  EXPECT_EQ(r.relaid_snapshots, 0u);
  for (uint64_t n : kTurns) {
    EXPECT_EQ(store_->GetManifest(ns_, testing::PrefixFromSeed(n))->put_id, puts[n]);
  }
  EXPECT_EQ(PageOwners(kLongest).size(), 6u);
  ExpectReads(turns);
}

TEST_F(StoreRelayoutTest, AChainReadInRangesOfAMebibyteAndMoreIsLeftAsItIs) {
  // Turns of 32768 tokens each: every run (a layer's pages from one owner)
  // is 4 MiB of QSA rows, or 2 + 2 MiB + 32 KiB of DSA rows.
  NamespaceSpec spec = testing::TestSpec("long-context");
  spec.qsa.max_tokens = spec.dsa.capacity = 3 * 32768;
  ns_ = store_->RegisterNamespace(spec).value();
  const Sequence big(spec, 5, 3 * 32768);
  std::map<uint64_t, std::vector<std::vector<uint8_t>>> turns;
  for (uint64_t n : {32768, 65536, 98304}) turns[n] = Put(big, testing::PrefixFromSeed(n), n);
  ASSERT_EQ(PageOwners(98304).size(), 3u);
  const CompactReport r = Compact();
  EXPECT_EQ(r.relaid_snapshots, 0u);
  EXPECT_EQ(PageOwners(98304).size(), 3u);
  ExpectReads(turns);
  ExpectClean(3);
}

TEST_F(StoreRelayoutTest, AnUnchainedStoreIsLeftAsItIs) {
  const auto blobs = seq_.Blobs(200);
  const std::vector<LayerBlob> layers{{0, Kind::kQsa, blobs[0]}, {1, Kind::kDsa, blobs[1]}};
  ASSERT_TRUE(store_->PutSnapshot(ns_, testing::PrefixFromSeed(1), 200, layers).ok());
  const CompactReport r = Compact();
  EXPECT_EQ(r.relaid_snapshots, 0u);
  EXPECT_EQ(r.relayout_skipped, 0u);
  for (uint32_t layer = 0; layer < 2; ++layer) {
    EXPECT_TRUE(store_->GetLayer(ns_, testing::PrefixFromSeed(1), layer).value() == blobs[layer]);
  }
  ExpectClean(1);
}

}  // namespace
}  // namespace auxstore
