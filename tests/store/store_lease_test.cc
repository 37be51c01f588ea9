// Store: leases between a lookup and its restore; batched manifest lookups;
// reading a layer straight into caller memory.
#include <chrono>
#include <thread>

#include "auxstore/blob_hash.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::StoreFixture;

class StoreLeaseTest : public StoreFixture {
 protected:
  void SetUp() override {
    options_.background_maintenance = false;  // passes run when the test says
    options_.capacity_bytes = 250 * 1024;
    StoreFixture::SetUp();
    while (!store_->Stats().index_ready) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Five 100 KiB snapshots, oldest first: the budget keeps two.
  void PutFive() {
    for (int i = 0; i < 5; ++i) {
      PutOpaque(PrefixFromSeed(i), 100 * 1024, i);
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  }
  bool Present(int i) { return store_->GetManifest(ns_, PrefixFromSeed(i)).ok(); }
};

TEST_F(StoreLeaseTest, ALeasedSnapshotIsNotEvictedUntilReleased) {
  PutFive();
  auto lease = store_->AcquireLease(ns_, PrefixFromSeed(0));
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_NE(*lease, 0u);
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(0)).ok()) << "the leased oldest stays";
  EXPECT_EQ(store_->Stats().evictions, 3u) << "three unleased ones went in its place";
  ASSERT_TRUE(store_->ReleaseLease(*lease).ok());
  EXPECT_TRUE(store_->ReleaseLease(*lease).IsNotFound()) << "released twice";
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_LE(store_->Stats().payload_bytes, options_.capacity_bytes);
}

TEST_F(StoreLeaseTest, ALeaseNeverReleasedExpiresOnItsOwn) {
  PutFive();
  ASSERT_TRUE(store_->AcquireLease(ns_, PrefixFromSeed(0), 40).ok());
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_TRUE(Present(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  // Now 0, 7 and 8 are over the budget, and 0 was used least recently.
  for (int i = 1; i < 5; ++i) (void)store_->Erase(ns_, PrefixFromSeed(i));
  PutOpaque(PrefixFromSeed(7), 100 * 1024, 7);
  PutOpaque(PrefixFromSeed(8), 100 * 1024, 8);
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_FALSE(Present(0)) << "an expired lease protects nothing";
}

TEST_F(StoreLeaseTest, LookupLeasesWhatItFindsAndAnErasePassesALease) {
  PutFive();
  std::vector<Prefix> candidates = {PrefixFromSeed(99), PrefixFromSeed(0), PrefixFromSeed(98)};
  auto match = store_->FindLongestPrefix(ns_, candidates, {.lease = true});
  ASSERT_TRUE(match.ok() && match->has_value());
  EXPECT_EQ((*match)->index, 1u);
  EXPECT_NE((*match)->lease, 0u);
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_TRUE(Present(0));
  // An operator's erase wins over a lease.
  ASSERT_TRUE(store_->Erase(ns_, PrefixFromSeed(0)).ok());
  EXPECT_FALSE(Present(0));
  EXPECT_TRUE(store_->AcquireLease(ns_, PrefixFromSeed(0)).status().IsNotFound());
  EXPECT_TRUE(store_->AcquireLease(ns_, PrefixFromSeed(1), 0).status().IsInvalidArgument());
}

TEST_F(StoreLeaseTest, TokenLookupLeasesTheMatch) {
  std::vector<uint32_t> tokens(64);
  for (uint32_t i = 0; i < tokens.size(); ++i) tokens[i] = 1000 + i;
  const auto hashes = PrefixHashes(tokens, 16, 5);
  auto blob = testing::RandomBytes(100 * 1024, 1);
  LayerBlob l{0, Kind::kOpaque, blob};
  ASSERT_TRUE(store_->PutSnapshot(ns_, hashes[1], 32, {&l, 1}).ok());
  for (int i = 0; i < 3; ++i) PutOpaque(PrefixFromSeed(50 + i), 100 * 1024, 50 + i);
  auto m = store_->LongestPrefixForTokens(ns_, tokens, 16, 5, {.lease = true});
  ASSERT_TRUE(m.ok() && m->has_value());
  EXPECT_EQ((*m)->tokens, 32u);
  EXPECT_NE((*m)->lease, 0u);
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_TRUE(store_->GetManifest(ns_, hashes[1]).ok()) << "oldest, but leased";
  EXPECT_TRUE(store_->ReleaseLease((*m)->lease).ok());
}

TEST_F(StoreLeaseTest, GetManifestsAnswersManyPrefixesAtOnce) {
  PutOpaque(PrefixFromSeed(1), 1000, 1);
  PutOpaque(PrefixFromSeed(3), 2000, 3);
  std::vector<Prefix> q = {PrefixFromSeed(1), PrefixFromSeed(2), PrefixFromSeed(3)};
  const uint64_t hits = store_->Stats().hits;
  auto got = store_->GetManifests(ns_, q);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 3u);
  ASSERT_TRUE((*got)[0] && (*got)[2]);
  EXPECT_FALSE((*got)[1]);
  EXPECT_EQ((*got)[2]->payload_bytes(), 2000u);
  EXPECT_EQ(store_->Stats().hits, hits) << "a batched check is not a hit";
  EXPECT_TRUE(store_->GetManifests(ns_, {})->empty());
}

TEST_F(StoreLeaseTest, ReadLayerIntoFillsCallerMemoryOrRefusesASmallOne) {
  const auto blob = PutOpaque(PrefixFromSeed(1), 300 * 1024 + 17, 1);  // 5 chunks of 64 KiB
  std::vector<uint8_t> dst(blob.size() + 100, 0xee);
  auto n = store_->ReadLayerInto(ns_, PrefixFromSeed(1), 0, dst);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, blob.size());
  EXPECT_TRUE(std::equal(blob.begin(), blob.end(), dst.begin()));
  EXPECT_EQ(dst.back(), 0xee) << "nothing past the layer is written";
  std::vector<uint8_t> small(blob.size() - 1, 0xab);
  Status st = store_->ReadLayerInto(ns_, PrefixFromSeed(1), 0, small).status();
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0xab; }));
  EXPECT_TRUE(store_->ReadLayerInto(ns_, PrefixFromSeed(1), 9, dst).status().IsNotFound());
  EXPECT_TRUE(store_->ReadLayerInto(ns_, PrefixFromSeed(2), 0, dst).status().IsNotFound());
}

}  // namespace
}  // namespace auxstore
