// Lookups answered from the snapshot index (issue 25): once the index is
// loaded, LongestPrefix reads only the longest candidate the index knows,
// so the index must know every stored manifest (and nothing else that a
// lookup could then report): puts, erases, a reopen, and a manifest damaged
// while the store was closed, which a lookup still finds and quarantines.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <chrono>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/fingerprint_set.h"
#include "store/keys.h"
#include "store/rocks/rocks_options.h"
#include "store/snapshot_index.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore::testing {
namespace {

namespace si = store_internal;

TEST(FingerprintSetTest, EraseKeepsEveryOtherFingerprintOfACrowdedRunFindable) {
  si::FingerprintSet set;
  // Fingerprints sharing their low bits land in one run of slots, as do
  // ones whose run wraps past the end of the array.
  std::vector<uint64_t> all;
  for (uint64_t i = 1; i <= 200; ++i) all.push_back((i << 32) | 7);
  for (uint64_t i = 1; i <= 50; ++i) all.push_back((i << 32) | 1023);
  for (uint64_t f : all) set.Insert(f);
  std::mt19937_64 rng(5);
  std::set<uint64_t> present(all.begin(), all.end());
  for (int round = 0; round < 150; ++round) {
    auto it = present.begin();
    std::advance(it, rng() % present.size());
    set.Erase(*it);
    present.erase(it);
    for (uint64_t f : all) ASSERT_EQ(set.Contains(f), present.count(f) == 1) << f;
  }
  EXPECT_EQ(set.size(), present.size());
}

TEST(FingerprintSetTest, ASharedFingerprintStaysUntilEachInsertIsErased) {
  si::FingerprintSet set;
  set.Insert(42);
  set.Insert(42);  // two keys with one fingerprint
  set.Erase(42);
  EXPECT_TRUE(set.Contains(42));
  set.Erase(42);
  EXPECT_FALSE(set.Contains(42));
  set.Erase(42);  // absent: nothing to take
  EXPECT_EQ(set.size(), 0u);
}

TEST(FingerprintSetTest, GrowingKeepsEveryFingerprint) {
  si::FingerprintSet set;
  for (int i = 0; i < 100000; ++i) set.Insert(si::FingerprintSet::Of(std::to_string(i)));
  for (int i = 0; i < 100000; ++i) {
    ASSERT_TRUE(set.Contains(si::FingerprintSet::Of(std::to_string(i)))) << i;
  }
  EXPECT_FALSE(set.Contains(si::FingerprintSet::Of("not put")));
}

TEST(SnapshotIndexLookupTest, AnswersOnlyOnceEveryManifestWasLoaded) {
  const std::vector<std::string> keys = {"a", "b", "c"};
  si::SnapshotIndex loading;
  loading.Added("b", {});
  EXPECT_EQ(loading.LongestKnown(keys), std::nullopt) << "still loading: ask RocksDB";
  si::SnapshotIndex partial;
  partial.FinishLoad({{"a", {}}}, {}, /*complete=*/false);
  EXPECT_EQ(partial.LongestKnown(keys), std::nullopt) << "the load stopped early";
  si::SnapshotIndex index;
  index.Added("a", {});  // during the load
  index.FinishLoad({{"b", {}}});
  EXPECT_EQ(index.LongestKnown(keys), std::optional<ptrdiff_t>(1));
  index.Added("c", {});
  EXPECT_EQ(index.LongestKnown(keys), std::optional<ptrdiff_t>(2));
  index.Removed("c");
  index.Removed("b");
  EXPECT_EQ(index.LongestKnown(keys), std::optional<ptrdiff_t>(0));
  index.Removed("a");
  EXPECT_EQ(index.LongestKnown(keys), std::optional<ptrdiff_t>(-1));
}

TEST(SnapshotIndexLookupTest, AnUnreadableManifestIsKnownButNoSnapshotUntilRemoved) {
  si::SnapshotIndex index;
  index.FinishLoad({{"a", {}}}, {"b"});
  EXPECT_EQ(index.snapshots(), 1u);
  EXPECT_EQ(index.LongestKnown(std::vector<std::string>{"a", "b"}), std::optional<ptrdiff_t>(1));
  index.Removed("b");  // quarantined
  EXPECT_EQ(index.LongestKnown(std::vector<std::string>{"a", "b"}), std::optional<ptrdiff_t>(0));
}

class StoreLookupTest : public StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    for (int i = 0; i < 64; ++i) cands_.push_back(PrefixFromSeed(500 + i));
  }
  void WaitForIndex() {
    for (int i = 0; i < 2000 && !store_->Stats().index_ready; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(store_->Stats().index_ready);
  }
  void Put(size_t i) { PutOpaque(cands_[i], 100, i); }
  std::optional<size_t> Longest() { return store_->LongestPrefix(ns_, cands_).value(); }
  // Flips a byte of the stored manifest of `p` in the closed store.
  void DamageManifest(const Prefix& p) {
    si::RocksSetup setup = si::MakeRocksSetup();
    std::vector<rocksdb::ColumnFamilyHandle*> cfs;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(setup.db, path(), setup.cfs, &cfs, &raw).ok());
    const std::string key = si::SnapshotKey(ns_, p);
    std::string value;
    ASSERT_TRUE(raw->Get(rocksdb::ReadOptions(), cfs[si::kManifests], key, &value).ok());
    value[value.size() / 2] ^= 0x20;
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(raw->Put(wo, cfs[si::kManifests], key, value).ok());
    for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
    (void)raw->Close();
    delete raw;
  }
  std::vector<Prefix> cands_;
};

TEST_F(StoreLookupTest, PutsAndErasesAfterTheLoadAreSeenByTheNextLookup) {
  WaitForIndex();
  EXPECT_EQ(Longest(), std::nullopt);
  Put(9);
  Put(30);
  EXPECT_EQ(Longest(), std::optional<size_t>(30));
  ASSERT_TRUE(store_->Erase(ns_, cands_[30]).ok());
  EXPECT_EQ(Longest(), std::optional<size_t>(9));
  ASSERT_TRUE(store_->Erase(ns_, cands_[9]).ok());
  EXPECT_EQ(Longest(), std::nullopt);
  EXPECT_EQ(store_->Stats().hits, 2u);
}

TEST_F(StoreLookupTest, AReopenedStoreFindsWhatEarlierHandlesStored) {
  for (size_t i : {2, 11, 47}) Put(i);
  Reopen();
  WaitForIndex();
  EXPECT_EQ(Longest(), std::optional<size_t>(47));
  EXPECT_EQ(store_->LongestPrefix(ns_, std::span(cands_).first(47)).value(),
            std::optional<size_t>(11));
  EXPECT_EQ(store_->LongestPrefix(ns_, std::span(cands_).first(2)).value(), std::nullopt);
}

TEST_F(StoreLookupTest, AManifestDamagedWhileClosedIsQuarantinedByTheLookupThatMeetsIt) {
  Put(5);
  Put(20);
  Close();
  DamageManifest(cands_[20]);
  Open();
  WaitForIndex();
  EXPECT_EQ(store_->Stats().snapshots, 1u) << "the damaged manifest is no snapshot";
  EXPECT_EQ(Longest(), std::optional<size_t>(5)) << "the next shorter candidate";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_EQ(Longest(), std::optional<size_t>(5));
  EXPECT_EQ(store_->Stats().quarantines, 1u) << "quarantined once";
  EXPECT_TRUE(store_->GetManifest(ns_, cands_[20]).status().IsNotFound());
}

}  // namespace
}  // namespace auxstore::testing
