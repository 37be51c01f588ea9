// Paged storage (docs/format.md, "Pages"): the rows a prefix's snapshots
// have in common are stored once, whichever snapshot stored them first, and
// every guarantee of a whole snapshot holds for the pages it shares.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "auxstore/maintenance.h"
#include "store/keys.h"
#include "store/rocks/rocks_options.h"
#include "tests/store/paged_sequence.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::kBlock;
using testing::RandomBytes;
using testing::Sequence;
namespace si = store_internal;

class StorePagedTest : public testing::StoreFixture {
 protected:
  // Puts the snapshot of the first n tokens of `seq` under `prefix`, chained
  // (or whole when `chained` is false); returns its blobs.
  std::vector<std::vector<uint8_t>> Put(const Sequence& seq, const Prefix& prefix, uint64_t n,
                                        bool chained = true) {
    auto blobs = seq.Blobs(n);
    const std::vector<LayerBlob> layers{{0, Kind::kQsa, blobs[0]}, {1, Kind::kDsa, blobs[1]}};
    const auto chain = seq.Chain(n);
    PutOptions o;
    if (chained) {
      o.block_chain = chain;
      o.block_size = kBlock;
    }
    Status s = store_->PutSnapshot(ns_, prefix, n, layers, o);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return blobs;
  }
  void ExpectReads(const Prefix& prefix, const std::vector<std::vector<uint8_t>>& blobs) {
    for (uint32_t layer = 0; layer < blobs.size(); ++layer) {
      auto got = store_->GetLayer(ns_, prefix, layer);
      ASSERT_TRUE(got.ok()) << "layer " << layer << ": " << got.status().ToString();
      EXPECT_TRUE(*got == blobs[layer]) << "layer " << layer << " differs";
    }
  }
  void WaitForIndex() {
    for (int i = 0; i < 2000 && !store_->Stats().index_ready; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(store_->Stats().index_ready);
  }
  PutId PutOf(const Prefix& p) { return store_->GetManifest(ns_, p)->put_id; }
  VerifyReport Verify() {
    auto r = store_->Verify();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : VerifyReport{};
  }

  const Sequence seq_{testing::TestSpec(), 1, 1024};
  const Prefix p64_ = testing::PrefixFromSeed(64), p128_ = testing::PrefixFromSeed(128),
               p200_ = testing::PrefixFromSeed(200);
};

TEST_F(StorePagedTest, TurnsOfOneSequenceStoreEachRowOnce) {
  const auto a = Put(seq_, p64_, 64);
  const uint64_t after_first = store_->Stats().bytes_written;
  const auto b = Put(seq_, p128_, 128);
  const auto c = Put(seq_, p200_, 200);  // 12 full pages and 8 tail rows
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.snapshots, 3u);
  EXPECT_EQ(s.payload_bytes, 3 * 32 + seq_.RowBytes(64 + 128 + 200)) << "each snapshot in full";
  EXPECT_EQ(s.unique_bytes, seq_.RowBytes(200)) << "each row stored once";
  EXPECT_EQ(after_first, seq_.RowBytes(64));
  EXPECT_EQ(s.bytes_written, seq_.RowBytes(200)) << "later turns wrote only their new rows";
  ExpectReads(p64_, a);
  ExpectReads(p128_, b);
  ExpectReads(p200_, c);

  const Manifest m = store_->GetManifest(ns_, p200_).value();
  ASSERT_EQ(m.layers[0].runs.size(), 3u);
  EXPECT_EQ(m.layers[0].runs[0].owner, PutOf(p64_));
  EXPECT_EQ(m.layers[0].runs[0].pages, 4u);
  EXPECT_EQ(m.layers[0].runs[1].owner, PutOf(p128_));
  EXPECT_EQ(m.layers[0].runs[2].owner, m.put_id);
  EXPECT_EQ(m.layers[0].full_pages(), 12u);

  const VerifyReport v = Verify();
  EXPECT_TRUE(v.clean());
  EXPECT_EQ(v.snapshots_ok, 3u);
  EXPECT_EQ(v.puts_checked, 3u);
  EXPECT_EQ(v.bytes_checked, seq_.RowBytes(200)) << "each stored byte read once";
  EXPECT_GT(v.shared_pages, 0u);
}

TEST_F(StorePagedTest, EverythingHoldsAcrossAReopen) {
  const auto a = Put(seq_, p64_, 64);
  const auto b = Put(seq_, p128_, 128);
  Reopen();
  WaitForIndex();
  EXPECT_EQ(store_->Stats().unique_bytes, seq_.RowBytes(128));
  ExpectReads(p64_, a);
  ExpectReads(p128_, b);
  const auto c = Put(seq_, p200_, 200);
  EXPECT_EQ(store_->Stats().bytes_written, seq_.RowBytes(200 - 128)) << "shares after a reopen";
  ExpectReads(p200_, c);
}

TEST_F(StorePagedTest, ErasingTheSnapshotThatStoredPagesKeepsThemForTheirOtherUsers) {
  Put(seq_, p64_, 64);
  const auto b = Put(seq_, p128_, 128);
  const auto c = Put(seq_, p200_, 200);
  ASSERT_TRUE(store_->Erase(ns_, p64_).ok());
  EXPECT_TRUE(store_->GetManifest(ns_, p64_).status().IsNotFound());
  ExpectReads(p128_, b);
  ExpectReads(p200_, c);
  EXPECT_EQ(store_->Stats().unique_bytes, seq_.RowBytes(200)) << "its pages are still used";
  ASSERT_TRUE(store_->Erase(ns_, p200_).ok());
  EXPECT_EQ(store_->Stats().unique_bytes, seq_.RowBytes(128)) << "its own rows went with it";
  ExpectReads(p128_, b);
  ASSERT_TRUE(store_->Erase(ns_, p128_).ok());
  EXPECT_EQ(store_->Stats().unique_bytes, 0u);
  const VerifyReport v = Verify();
  EXPECT_TRUE(v.clean());
  EXPECT_EQ(v.orphan_puts, 0u) << "the last user's erase removed every record";
  EXPECT_EQ(v.orphan_records, 0u);
  EXPECT_EQ(v.records_checked, 0u);
}

TEST_F(StorePagedTest, ANewTurnAfterTheOwnerWasErasedStillShares) {
  Put(seq_, p64_, 64);
  Put(seq_, p128_, 128);
  ASSERT_TRUE(store_->Erase(ns_, p64_).ok());
  const uint64_t before = store_->Stats().bytes_written;
  const auto c = Put(seq_, p200_, 200);
  EXPECT_EQ(store_->Stats().bytes_written - before, seq_.RowBytes(200 - 128));
  ExpectReads(p200_, c);
}

TEST_F(StorePagedTest, DifferentRowsUnderTheSameChainAreNeverShared) {
  // An engine that hands the same chain with other bytes (another weight
  // revision it forgot to name, a bug) gets its own bytes back.
  Put(seq_, p64_, 64);
  const Sequence other(testing::TestSpec(), 99, 1024);
  auto blobs = other.Blobs(128);
  const std::vector<LayerBlob> layers{{0, Kind::kQsa, blobs[0]}, {1, Kind::kDsa, blobs[1]}};
  const auto chain = seq_.Chain(128);
  PutOptions o;
  o.block_chain = chain;
  o.block_size = kBlock;
  ASSERT_TRUE(store_->PutSnapshot(ns_, p128_, 128, layers, o).ok());
  ExpectReads(p128_, blobs);
  EXPECT_EQ(store_->Stats().unique_bytes, seq_.RowBytes(64 + 128));
}

TEST_F(StorePagedTest, WholeAndChainedPutsOfOneSequenceCoexist) {
  const auto a = Put(seq_, p64_, 64, /*chained=*/false);
  const auto b = Put(seq_, p128_, 128);
  ExpectReads(p64_, a);
  ExpectReads(p128_, b);
  EXPECT_EQ(store_->Stats().unique_bytes, seq_.RowBytes(64 + 128)) << "a whole put shares nothing";
  EXPECT_TRUE(store_->GetManifest(ns_, p64_)->layers[0].runs.empty());
}

TEST_F(StorePagedTest, BadChainsAreRefusedAndChangeNothing) {
  const auto blobs = seq_.Blobs(64);
  const std::vector<LayerBlob> layers{{0, Kind::kQsa, blobs[0]}, {1, Kind::kDsa, blobs[1]}};
  const auto chain = seq_.Chain(64);
  PutOptions no_size;
  no_size.block_chain = chain;
  EXPECT_TRUE(store_->PutSnapshot(ns_, p64_, 64, layers, no_size).IsInvalidArgument());
  PutOptions too_long;
  too_long.block_chain = chain;
  too_long.block_size = kBlock;
  Status s = store_->PutSnapshot(ns_, p64_, 63, layers, too_long);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("more than the snapshot's 63 tokens"), std::string::npos)
      << s.message();
  // A namespace whose pages are not whole blocks.
  NamespaceSpec paged = testing::TestSpec();
  paged.page_tokens = 24;
  const NamespaceId ns24 = store_->RegisterNamespace(paged).value();
  s = store_->PutSnapshot(ns24, p64_, 64, layers, too_long);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("page of 24 tokens"), std::string::npos) << s.message();
  const StoreStats st = store_->Stats();
  EXPECT_EQ(st.puts, 0u);
  EXPECT_EQ(st.snapshots, 0u);
  EXPECT_EQ(st.bytes_written, 0u);
}

TEST_F(StorePagedTest, NamespacePagesSpanSeveralBlocks) {
  NamespaceSpec paged = testing::TestSpec();
  paged.page_tokens = 64;
  const NamespaceId ns = store_->RegisterNamespace(paged).value();
  ASSERT_NE(ns, ns_) << "the page size is part of the namespace's identity";
  ns_ = ns;
  Put(seq_, p64_, 100);
  const auto b = Put(seq_, p128_, 150);
  ExpectReads(p128_, b);
  const Manifest m = store_->GetManifest(ns_, p128_).value();
  EXPECT_EQ(m.page_tokens, 64u);
  EXPECT_EQ(m.layers[0].runs.front().pages, 1u) << "the first put stored one full 64-token page";
  EXPECT_EQ(m.layers[0].full_pages(), 2u);
}

TEST_F(StorePagedTest, ADamagedSharedPageQuarantinesExactlyTheSnapshotsUsingIt) {
  Put(seq_, p64_, 64);
  Put(seq_, p128_, 128);
  Put(seq_, p200_, 200);
  const Sequence other(testing::TestSpec(), 7, 1024);
  const Prefix q = testing::PrefixFromSeed(7);
  const auto untouched = Put(other, q, 128);
  // Damage chunk 0 of the QSA stream of the first put: pages 0-3 that every
  // turn of the sequence reads.
  const std::string key = si::RecordKey(ns_, PutOf(p64_), 0, 0, 0);
  Close();
  {
    si::RocksSetup setup = si::MakeRocksSetup();
    std::vector<rocksdb::ColumnFamilyHandle*> cfs;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(setup.db, path(), setup.cfs, &cfs, &raw).ok());
    std::string v;
    ASSERT_TRUE(raw->Get(rocksdb::ReadOptions(), cfs[si::kRecords], key, &v).ok());
    v[v.size() - 3] ^= 0x08;
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(raw->Put(wo, cfs[si::kRecords], key, v).ok());
    for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  Open();
  const VerifyReport v = Verify();
  EXPECT_FALSE(v.clean());
  std::set<Prefix> corrupt;
  for (const auto& c : v.corrupt) corrupt.insert(c.prefix);
  EXPECT_EQ(corrupt, (std::set<Prefix>{p64_, p128_, p200_}));
  EXPECT_EQ(v.snapshots_ok, 1u);

  auto r = store_->GetLayer(ns_, p128_, 0);
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  // Every user of the damaged record is gone; the DSA layer of the same
  // snapshots is not read again to find that out.
  EXPECT_TRUE(store_->GetManifest(ns_, p64_).status().IsNotFound());
  EXPECT_TRUE(store_->GetManifest(ns_, p128_).status().IsNotFound());
  EXPECT_TRUE(store_->GetManifest(ns_, p200_).status().IsNotFound());
  ExpectReads(q, untouched);
  // And nothing was shared from the damaged pages afterwards.
  const auto again = Put(seq_, p128_, 128);
  ExpectReads(p128_, again);
  const VerifyReport after = Verify();
  EXPECT_TRUE(after.clean()) << (after.corrupt.empty() ? "" : after.corrupt[0].why);
}

TEST_F(StorePagedTest, RepairRemovesTheUsersOfADamagedPageAndCompactFreesIt) {
  Put(seq_, p64_, 64);
  Put(seq_, p128_, 128);
  const std::string key = si::RecordKey(ns_, PutOf(p128_), 1, 2, 0);  // DSA `valid`, page 4
  Close();
  {
    si::RocksSetup setup = si::MakeRocksSetup();
    std::vector<rocksdb::ColumnFamilyHandle*> cfs;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(setup.db, path(), setup.cfs, &cfs, &raw).ok());
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(raw->Delete(wo, cfs[si::kRecords], key).ok());
    for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  Open();
  const VerifyReport v = Verify();
  ASSERT_EQ(v.corrupt.size(), 1u);
  EXPECT_EQ(v.corrupt[0].prefix, p128_) << "the turn that does not read page 4 is intact";
  auto rep = store_->Repair(v);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(rep->removed.size(), 1u);
  ASSERT_TRUE(store_->Compact({}).ok());
  const VerifyReport after = Verify();
  EXPECT_TRUE(after.clean());
  EXPECT_EQ(after.snapshots_ok, 1u);
  EXPECT_EQ(after.orphan_puts, 0u);
  EXPECT_EQ(store_->Stats().unique_bytes, seq_.RowBytes(64));
}

TEST_F(StorePagedTest, CapacityCountsSharedPagesOnceAndKeepsThePagesOfEvictedOwners) {
  Close();
  options_.capacity_bytes = seq_.RowBytes(200) + seq_.RowBytes(32);
  Open();
  WaitForIndex();
  const Sequence other(testing::TestSpec(), 5, 1024);
  const Prefix q = testing::PrefixFromSeed(5);
  Put(seq_, p64_, 64);
  Put(seq_, p128_, 128);
  Put(other, q, 64);
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_EQ(store_->Stats().evictions, 0u) << "3 snapshots of 256 rows in full, 192 stored, fit";
  // The next turn overflows the budget: the least recently used snapshots
  // go (p64, p128: freeing nothing the newest turn still reads; then q),
  // and the newest turn reads on from the pages the evicted turns stored.
  const auto c = Put(seq_, p200_, 200);
  ASSERT_TRUE(store_->RunMaintenance().ok());
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.evictions, 3u);
  EXPECT_EQ(s.unique_bytes, seq_.RowBytes(200));
  EXPECT_LE(s.unique_bytes, options_.capacity_bytes);
  ExpectReads(p200_, c);
  EXPECT_TRUE(store_->GetManifest(ns_, q).status().IsNotFound());
  const VerifyReport v = Verify();
  EXPECT_TRUE(v.clean());
  EXPECT_EQ(v.orphan_puts, 0u);
}

// Every entry of column family `cf` (raw RocksDB, the store closed).
std::map<std::string, std::string> RawFamily(const std::string& path, int cf) {
  si::RocksSetup setup = si::MakeRocksSetup();
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  rocksdb::DB* raw = nullptr;
  std::map<std::string, std::string> out;
  EXPECT_TRUE(rocksdb::DB::Open(setup.db, path, setup.cfs, &cfs, &raw).ok());
  if (raw == nullptr) return out;
  {
    std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(rocksdb::ReadOptions(), cfs[cf]));
    for (it->SeekToFirst(); it->Valid(); it->Next())
      out[it->key().ToString()] = it->value().ToString();
  }
  for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
  (void)raw->Close();
  delete raw;
  return out;
}

// Deletes every entry of the column families `cfs` (raw RocksDB, synced).
void DropFamilies(const std::string& path, std::initializer_list<int> families) {
  si::RocksSetup setup = si::MakeRocksSetup();
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(setup.db, path, setup.cfs, &cfs, &raw).ok());
  rocksdb::WriteBatch batch;
  for (int cf : families) {
    std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(rocksdb::ReadOptions(), cfs[cf]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) (void)batch.Delete(cfs[cf], it->key());
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  ASSERT_TRUE(raw->Write(wo, &batch).ok());
  for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
  (void)raw->Close();
  delete raw;
}

// Run records, refs and page entries are derived from the manifests and
// the records: lost, they are a store problem (never a corrupt snapshot)
// and repair writes them again exactly as the puts wrote them.
TEST_F(StorePagedTest, RepairRebuildsRunRecordsRefsAndPageEntriesExactly) {
  const auto a = Put(seq_, p64_, 64);
  const auto b = Put(seq_, p128_, 128);
  const auto c = Put(seq_, p200_, 200);
  Close();
  const auto runs = RawFamily(path(), si::kRuns);
  const auto refs = RawFamily(path(), si::kRefs);
  const auto pages = RawFamily(path(), si::kPages);
  ASSERT_EQ(runs.size(), 3u);
  ASSERT_FALSE(refs.empty());
  ASSERT_FALSE(pages.empty());
  for (auto families : {std::vector<int>{si::kRuns}, std::vector<int>{si::kRefs, si::kPages},
                        std::vector<int>{si::kRuns, si::kRefs}}) {
    if (families.size() == 1) {
      DropFamilies(path(), {families[0]});
    } else {
      DropFamilies(path(), {families[0], families[1]});
    }
    Open();
    const VerifyReport before = Verify();
    EXPECT_TRUE(before.corrupt.empty())
        << "intact snapshots called corrupt: " << before.corrupt.front().why;
    EXPECT_FALSE(before.clean()) << "lost derived metadata is a store problem";
    auto r = store_->Repair(before);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->removed.empty());
    EXPECT_TRUE(r->not_repaired.empty()) << r->not_repaired.front();
    EXPECT_TRUE(Verify().clean());
    ExpectReads(p64_, a);
    ExpectReads(p128_, b);
    ExpectReads(p200_, c);
    Close();
    EXPECT_EQ(RawFamily(path(), si::kRuns), runs);
    EXPECT_EQ(RawFamily(path(), si::kRefs), refs);
    EXPECT_EQ(RawFamily(path(), si::kPages), pages);
  }
}

}  // namespace
}  // namespace auxstore
