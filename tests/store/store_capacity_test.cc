// Store: byte budget, LRU order, TTL, space reclaimed.
#include <chrono>
#include <thread>

#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::DirBytes;
using testing::PrefixFromSeed;
using testing::StoreFixture;

class StoreCapacityTest : public StoreFixture {
 protected:
  void SetUp() override {
    options_.background_maintenance = false;  // passes run when the test says
    StoreFixture::SetUp();
  }
};

TEST_F(StoreCapacityTest, LeastRecentlyUsedSnapshotsAreEvictedDownToTheBudget) {
  Close();
  options_.capacity_bytes = 350 * 1024;
  Open();
  for (int i = 0; i < 5; ++i) {
    PutOpaque(PrefixFromSeed(i), 100 * 1024, i);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Use 0 and 1 again: 2 and 3 become the least recently used.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(0)).ok());
  ASSERT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(1)).ok());
  ASSERT_TRUE(store_->RunMaintenance().ok());
  const StoreStats s = store_->Stats();
  EXPECT_LE(s.payload_bytes, options_.capacity_bytes);
  EXPECT_EQ(s.evictions, 2u);
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(2)).status().IsNotFound());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(3)).status().IsNotFound());
  for (int i : {0, 1, 4}) EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(i)).ok()) << i;
}

TEST_F(StoreCapacityTest, RecencySurvivesAReopen) {
  Close();
  options_.capacity_bytes = 250 * 1024;
  Open();
  for (int i = 0; i < 3; ++i) {
    PutOpaque(PrefixFromSeed(i), 100 * 1024, i);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(0)).ok());  // 1 is now the LRU
  Reopen();                                                       // Close persists recency
  while (!store_->Stats().index_ready) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(1)).status().IsNotFound());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(0)).ok());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(2)).ok());
}

TEST_F(StoreCapacityTest, BackgroundEvictionKeepsTheBudgetWithoutBlockingWriters) {
  Close();
  options_.capacity_bytes = 1u << 20;
  options_.background_maintenance = true;
  Open();
  for (int i = 0; i < 40; ++i) PutOpaque(PrefixFromSeed(i), 128 * 1024, i);
  for (int i = 0; i < 200 && store_->Stats().payload_bytes > options_.capacity_bytes; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LE(store_->Stats().payload_bytes, options_.capacity_bytes);
  EXPECT_GE(store_->Stats().evictions, 32u);
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(39)).ok()) << "the newest stays";
}

TEST_F(StoreCapacityTest, ExpiredSnapshotsAreRemoved) {
  Close();
  options_.ttl_seconds = 1;
  Open();
  PutOpaque(PrefixFromSeed(1), 1000, 1);
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(1)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  PutOpaque(PrefixFromSeed(2), 1000, 2);
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(1)).status().IsNotFound());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(2)).ok());
  EXPECT_EQ(store_->Stats().expirations, 1u);
}

TEST_F(StoreCapacityTest, ErasedSnapshotsGiveTheirSpaceBack) {
  constexpr int kSnapshots = 8;
  constexpr size_t kBytes = 4u << 20;
  for (int i = 0; i < kSnapshots; ++i) PutOpaque(PrefixFromSeed(i), kBytes, i);
  const uint64_t before = DirBytes(path());
  for (int i = 0; i < kSnapshots; ++i) ASSERT_TRUE(store_->Erase(ns_, PrefixFromSeed(i)).ok());
  const uint64_t after = DirBytes(path());
  const uint64_t erased = kSnapshots * kBytes;
  EXPECT_GE(before - std::min(before, after), erased * 8 / 10)
      << "before " << before << " after " << after;
}

}  // namespace
}  // namespace auxstore
