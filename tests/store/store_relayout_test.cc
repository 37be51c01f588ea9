// Compaction's re-layout (CompactOptions::relayout, docs/format.md
// "Re-layout"): the pages of a chain end in one stream that every snapshot
// of the chain reads in order, nothing else of it is kept, and every
// snapshot reads back exactly as before.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "auxstore/maintenance.h"
#include "store/db_store.h"
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

// The reads that write only the caller's memory, each as an engine calls it
// on the turns of one chain: what they read, to compare with what was put.
class RelayoutReadsTest : public StoreRelayoutTest {
 protected:
  using Turns = std::map<uint64_t, std::vector<std::vector<uint8_t>>>;
  enum Call { kReadLayerInto, kReadLayersInto, kReadSnapshotsInto, kGetLayer, kReadLayerRows };
  static constexpr Call kCalls[] = {kReadLayerInto, kReadLayersInto, kReadSnapshotsInto, kGetLayer,
                                    kReadLayerRows};
  static const char* Name(Call c) {
    static constexpr const char* kNames[] = {"ReadLayerInto", "ReadLayersInto", "ReadSnapshotsInto",
                                             "GetLayer", "ReadLayerRows"};
    return kNames[c];
  }

  struct Chain {
    Turns turns;
    uint64_t salt = 0;
    std::map<uint64_t, uint64_t> rows;  // each turn's rows per array (both layers have n)
    Turns middle;                       // rows [rows / 4, rows / 2) of each layer, as put
  };
  Chain PutChain(uint64_t seed) {
    Chain c;
    c.salt = 10000 * seed;
    c.turns = PutTurns(Sequence(testing::TestSpec(), 100 + seed, 1024), c.salt);
    for (const auto& [n, blobs] : c.turns) {
      std::vector<uint8_t> none;
      c.rows[n] = store_->ReadLayerRows(ns_, Turn(c, n), 0, 0, 0, none).value().rows;
      for (uint32_t layer = 0; layer < 2; ++layer) {
        c.middle[n].emplace_back(blobs[layer].size());
        EXPECT_TRUE(Middle(c, n, layer, c.middle[n].back()).ok());
      }
    }
    return c;
  }
  static Prefix Turn(const Chain& c, uint64_t n) { return testing::PrefixFromSeed(n + c.salt); }
  Status Middle(const Chain& c, uint64_t n, uint32_t layer, std::vector<uint8_t>& dst) {
    const uint64_t rows = c.rows.at(n);
    auto got = store_->ReadLayerRows(ns_, Turn(c, n), layer, rows / 4, rows / 2, dst);
    if (got.ok()) dst.resize(got->bytes);
    return got.status();
  }

  // Reads turns `ns` of `c` through `call` (ReadSnapshotsInto: all in one
  // batch); "" when each came back exact, else what went wrong.
  std::string Read(Call call, const Chain& c, const std::vector<uint64_t>& ns) {
    std::vector<std::vector<std::vector<uint8_t>>> got;
    std::vector<std::vector<Store::LayerInto>> into;
    for (uint64_t n : ns) {
      const auto& blobs = c.turns.at(n);
      got.push_back({std::vector<uint8_t>(blobs[0].size()), std::vector<uint8_t>(blobs[1].size())});
    }
    for (auto& g : got) into.push_back({{0, g[0]}, {1, g[1]}});
    std::vector<Status> st(ns.size());
    if (call == kReadSnapshotsInto) {
      std::vector<Store::SnapshotInto> batch;
      for (size_t i = 0; i < ns.size(); ++i) batch.push_back({ns_, Turn(c, ns[i]), into[i]});
      store_->ReadSnapshotsInto(batch);
      for (size_t i = 0; i < ns.size(); ++i)
        st[i] = into[i][0].status.ok() ? into[i][1].status : into[i][0].status;
    }
    for (size_t i = 0; i < ns.size(); ++i) {
      const Prefix p = Turn(c, ns[i]);
      for (uint32_t layer = 0; layer < 2 && st[i].ok(); ++layer) {
        if (call == kReadLayerInto) {
          st[i] = store_->ReadLayerInto(ns_, p, layer, got[i][layer]).status();
        } else if (call == kGetLayer) {
          auto whole = store_->GetLayer(ns_, p, layer);
          st[i] = whole.status();
          if (whole.ok()) got[i][layer] = std::move(*whole);
        } else if (call == kReadLayerRows) {
          st[i] = Middle(c, ns[i], layer, got[i][layer]);
        }
      }
      if (call == kReadLayersInto) st[i] = store_->ReadLayersInto(ns_, p, into[i]);
      const auto& want = call == kReadLayerRows ? c.middle.at(ns[i]) : c.turns.at(ns[i]);
      if (!st[i].ok()) return std::to_string(ns[i]) + " tokens: " + st[i].ToString();
      if (got[i] != want) return std::to_string(ns[i]) + " tokens: other bytes";
    }
    return "";
  }
  uint64_t Repeated() { return store_->Stats().reads_repeated; }
};

TEST_F(RelayoutReadsTest, EachReadIntoCallerMemoryThatMeetsItsSnapshotMovedReadsItAgain) {
  // The chain moves between the call's manifest read and its first record
  // read, every time: the call reads again under the new manifests and
  // returns the exact bytes (its records had gone: it would be a miss).
  auto& db = dynamic_cast<store_internal::DbStore&>(*store_);
  for (Call call : kCalls) {
    const Chain c = PutChain(call + 1);
    bool moved = false;
    db.SetAfterManifestReadForTest([&] {
      if (moved) return;
      moved = true;
      EXPECT_EQ(Compact().relaid_snapshots, 6u);
    });
    const uint64_t before = Repeated();
    const std::vector<uint64_t> read =
        call == kReadSnapshotsInto ? std::vector<uint64_t>(std::begin(kTurns), std::end(kTurns))
                                   : std::vector<uint64_t>{kLongest};
    EXPECT_EQ(Read(call, c, read), "") << Name(call);
    db.SetAfterManifestReadForTest(nullptr);
    EXPECT_TRUE(moved) << Name(call);
    EXPECT_GE(Repeated(), before + 1) << Name(call) << " did not read again";
    EXPECT_EQ(Read(call, c, read), "") << Name(call) << ", after";
  }
  EXPECT_EQ(store_->Stats().quarantines, 0u);
  ExpectClean(6 * std::size(kCalls));
}

TEST_F(RelayoutReadsTest, ReadsIntoCallerMemoryBesideLiveCompactionsAlwaysHit) {
  // No hook: five readers, one per call, beside rounds that each put a
  // fresh chain and compact it. Nothing is erased, so every read is a hit
  // with the exact bytes, whether or not it met a move.
  std::mutex mu;
  std::shared_ptr<const Chain> current = std::make_shared<const Chain>(PutChain(1));
  std::vector<std::string> failures;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> exact{0}, wrong{0};
  auto reader = [&](Call call) {
    while (!stop.load()) {
      std::shared_ptr<const Chain> c;
      {
        std::lock_guard lock(mu);
        c = current;
      }
      const std::string why = Read(call, *c, {std::begin(kTurns), std::end(kTurns)});
      if (why.empty()) {
        ++exact;
        continue;
      }
      ++wrong;
      std::lock_guard lock(mu);
      if (failures.size() < 4) failures.push_back(std::string(Name(call)) + ", " + why);
    }
  };
  std::vector<std::thread> readers;
  for (Call call : kCalls) readers.emplace_back(reader, call);
  constexpr uint64_t kRounds = 8;
  for (uint64_t round = 1; round <= kRounds; ++round) {
    if (round > 1) {
      auto next = std::make_shared<const Chain>(PutChain(round));
      std::lock_guard lock(mu);
      current = std::move(next);
    }
    EXPECT_EQ(Compact().relaid_snapshots, 6u);
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0u) << (failures.empty() ? "" : failures[0]);
  EXPECT_GT(exact.load(), 0u);
  EXPECT_EQ(store_->Stats().quarantines, 0u);
  ExpectClean(6 * kRounds);
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
