// Manifests, leases and the reclaim listing in a real RADOS pool (the ctest
// fixture's cluster).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "store/rados/rados_manifests.h"
#include "store/rados/rados_page_store.h"
#include "store/rados/rados_reclaim.h"
#include "tests/rados/rados_test_env.h"

namespace auxstore::rados {
namespace {

using namespace std::chrono_literals;
using testenv::Connect;
using testenv::PageBytes;
using testenv::UniqueNamespace;
using testenv::UriFor;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// Puts `n` pages of family `seed`; their keys.
std::vector<PageKey> PutFamily(RadosConnection& conn, uint64_t seed, size_t n, size_t size) {
  std::vector<std::vector<uint8_t>> pages;
  for (size_t i = 0; i < n; ++i) pages.push_back(PageBytes(seed, i, size));
  std::vector<ByteSpan> spans(pages.begin(), pages.end());
  auto put = RadosPageStore(conn).PutPages(spans);
  EXPECT_TRUE(put.ok()) << put.status().ToString();
  return put.ok() ? put->keys : std::vector<PageKey>{};
}

TEST(RadosManifests, ACommittedManifestReadsBackWithItsPages) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  std::vector<PageKey> keys = PutFamily(*conn, 10, 5, 4096);
  RadosManifests manifests(*conn);
  const auto id = Bytes("ns|prefix-1");
  const auto body = Bytes("manifest body 1");
  auto commit = manifests.Commit(id, body, keys);
  ASSERT_TRUE(commit.ok()) << commit.status().ToString();
  EXPECT_EQ(*commit, CommitOutcome::kCommitted);
  auto m = manifests.Read(id);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->bytes, body);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(m->pages, keys);
}

// More pages than one omap read returns (1024): the page list is read whole.
TEST(RadosManifests, AManifestNamingMorePagesThanOneOmapReadReadsWhole) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  std::vector<PageKey> keys = PutFamily(*conn, 15, 1500, 64);
  ASSERT_EQ(keys.size(), 1500u);
  RadosManifests manifests(*conn);
  ASSERT_TRUE(manifests.Commit(Bytes("many"), Bytes("body"), keys).ok());
  auto m = manifests.Read(Bytes("many"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(m->pages, keys);
}

TEST(RadosManifests, ACommitNamingAMissingPageIsRefusedAndNothingIsVisible) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  std::vector<PageKey> keys = PutFamily(*conn, 11, 3, 1024);
  keys.push_back(PageKey::Of(PageBytes(11, 999, 1024)));  // never put
  RadosManifests manifests(*conn);
  const auto id = Bytes("ns|prefix-missing");
  auto commit = manifests.Commit(id, Bytes("body"), keys);
  ASSERT_FALSE(commit.ok());
  EXPECT_EQ(commit.status().code(), StatusCode::kNotFound) << commit.status().ToString();
  EXPECT_NE(commit.status().message().find(keys.back().ObjectName()), std::string::npos);
  EXPECT_EQ(manifests.Read(id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(testenv::CountObjects(*conn), 3u) << "no manifest object was created";
}

TEST(RadosManifests, TwoWritersOfOneManifestOneWinsOrBothFindTheSameBytes) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  std::vector<PageKey> keys = PutFamily(*conn, 12, 2, 1024);
  RadosManifests manifests(*conn);
  const auto id = Bytes("ns|prefix-2");
  ASSERT_EQ(*manifests.Commit(id, Bytes("same"), keys), CommitOutcome::kCommitted);
  auto same = manifests.Commit(id, Bytes("same"), keys);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(*same, CommitOutcome::kAlreadyCommitted);
  auto other = manifests.Commit(id, Bytes("different"), keys);
  EXPECT_EQ(other.status().code(), StatusCode::kBusy) << other.status().ToString();
  EXPECT_EQ(manifests.Read(id)->bytes, Bytes("same")) << "never overwritten";
}

// A writer thread (its own client) puts fresh pages and commits a manifest
// naming them, over and over; a reader polls for each manifest. Whenever it
// sees one, every page it names is there and exact.
TEST(RadosManifests, AManifestIsNeverVisibleBeforeItsPages) {
  const std::string ns = UniqueNamespace();
  auto writer_conn = Connect(UriFor(ns));
  auto reader_conn = Connect(UriFor(ns));
  ASSERT_TRUE(writer_conn && reader_conn);
  constexpr int kSnapshots = 20;
  std::atomic<int> committed{0};
  std::atomic<bool> writer_failed{false};
  std::thread writer([&] {
    RadosManifests manifests(*writer_conn);
    for (int s = 0; s < kSnapshots; ++s) {
      auto keys = PutFamily(*writer_conn, 100 + s, 8, 32768);
      auto c = manifests.Commit(Bytes("snap-" + std::to_string(s)), Bytes("body"), keys);
      if (!c.ok()) {
        ADD_FAILURE() << c.status().ToString();
        writer_failed = true;
        return;
      }
      committed = s + 1;
    }
  });
  RadosManifests manifests(*reader_conn);
  RadosPageStore pages(*reader_conn);
  int seen = 0;
  for (int s = 0; s < kSnapshots && !writer_failed; ++s) {
    while (!writer_failed) {
      auto m = manifests.Read(Bytes("snap-" + std::to_string(s)));
      if (m.ok()) {
        EXPECT_EQ(m->pages.size(), 8u);
        for (auto& got : pages.ReadPages(m->pages))
          EXPECT_TRUE(got.ok()) << got.status().ToString();
        ++seen;
        break;
      }
      if (m.status().code() != StatusCode::kNotFound) {
        ADD_FAILURE() << m.status().ToString();
        break;
      }
      if (committed > s) continue;  // committed meanwhile: the next read must find it
      std::this_thread::sleep_for(1ms);
    }
  }
  writer.join();
  EXPECT_EQ(seen, kSnapshots);
}

TEST(RadosLeases, ALiveLeaseBlocksEraseAndAnExpiredOneStopsBlocking) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  RadosManifests manifests(*conn);
  const auto id = Bytes("ns|leased");
  ASSERT_TRUE(manifests.Commit(id, Bytes("b"), PutFamily(*conn, 13, 1, 100)).ok());
  // node-a takes a short lease and "dies" (never releases it)
  ASSERT_TRUE(manifests.TakeLease(id, "node-a", 1500ms).ok());
  auto leases = manifests.Leases(id);
  ASSERT_TRUE(leases.ok()) << leases.status().ToString();
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ((*leases)[0].holder, "node-a");
  Status busy = manifests.Erase(id);
  EXPECT_EQ(busy.code(), StatusCode::kBusy) << busy.ToString();
  EXPECT_NE(busy.message().find("node-a"), std::string::npos);
  EXPECT_TRUE(manifests.Read(id).ok()) << "still there while leased";

  std::this_thread::sleep_until(std::chrono::system_clock::time_point((*leases)[0].deadline) +
                                100ms);
  Status erased = manifests.Erase(id);
  EXPECT_TRUE(erased.ok()) << erased.ToString();
  EXPECT_EQ(manifests.Read(id).status().code(), StatusCode::kNotFound);
  // a lease on an erased manifest is refused and does not bring it back
  EXPECT_EQ(manifests.TakeLease(id, "node-b", 60s).code(), StatusCode::kNotFound);
  EXPECT_EQ(manifests.Read(id).status().code(), StatusCode::kNotFound);
}

// Leases taken in one round: each id's outcome is its own (a bad id and a
// missing manifest fail alone, nothing is created), and each lease taken
// blocks an erase as one taken alone does.
TEST(RadosLeases, LeasesTakenInOneRoundAnswerEachIdAlone) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  RadosManifests manifests(*conn);
  const auto a = Bytes("ns|a"), b = Bytes("ns|b"), missing = Bytes("ns|missing");
  ASSERT_TRUE(manifests.Commit(a, Bytes("a"), PutFamily(*conn, 14, 1, 100)).ok());
  ASSERT_TRUE(manifests.Commit(b, Bytes("b"), PutFamily(*conn, 15, 1, 100)).ok());
  const std::vector<uint8_t> empty;
  const std::vector<ByteSpan> ids = {a, empty, missing, b};
  const std::vector<Status> taken = manifests.TakeLeases(ids, "node-a", 60s);
  ASSERT_EQ(taken.size(), 4u);
  EXPECT_TRUE(taken[0].ok()) << taken[0].ToString();
  EXPECT_EQ(taken[1].code(), StatusCode::kInvalidArgument) << taken[1].ToString();
  EXPECT_EQ(taken[2].code(), StatusCode::kNotFound) << taken[2].ToString();
  EXPECT_TRUE(taken[3].ok()) << taken[3].ToString();
  EXPECT_EQ(manifests.Read(missing).status().code(), StatusCode::kNotFound)
      << "a lease created the missing manifest";
  for (const auto& id : {a, b}) {
    auto leases = manifests.Leases(id);
    ASSERT_TRUE(leases.ok()) << leases.status().ToString();
    ASSERT_EQ(leases->size(), 1u);
    EXPECT_EQ((*leases)[0].holder, "node-a");
    EXPECT_EQ(manifests.Erase(id).code(), StatusCode::kBusy);
  }
  const std::vector<Status> bad_holder = manifests.TakeLeases(ids, "", 60s);
  for (const Status& st : bad_holder) EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

// A holder that got its lease keeps the manifest until it releases it, even
// with an eraser racing it (the erase's version guard); 100 races, each on
// its own manifest, each client on its own connection.
TEST(RadosLeases, AnEraseRacingALeaseNeverRemovesTheManifestUnderIt) {
  const std::string ns = UniqueNamespace();
  auto holder_conn = Connect(UriFor(ns));
  auto eraser_conn = Connect(UriFor(ns));
  ASSERT_TRUE(holder_conn && eraser_conn);
  RadosManifests holder(*holder_conn), eraser(*eraser_conn);
  const auto pages = PutFamily(*holder_conn, 16, 1, 100);
  int leased = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const auto id = Bytes("race-" + std::to_string(trial));
    ASSERT_TRUE(holder.Commit(id, Bytes("b"), pages).ok());
    std::thread erase([&] {
      for (;;) {
        Status st = eraser.Erase(id);
        if (st.ok() || st.IsNotFound()) return;
        ASSERT_EQ(st.code(), StatusCode::kBusy) << st.ToString();
      }
    });
    // 0-3 ms late: sometimes before the eraser's read, sometimes between
    // its read and its remove, sometimes after the remove
    std::this_thread::sleep_for(std::chrono::microseconds((trial * 137) % 3000));
    Status lease = holder.TakeLease(id, "holder", 60s);
    if (lease.ok()) {
      ++leased;
      auto m = holder.Read(id);
      EXPECT_TRUE(m.ok()) << "trial " << trial
                          << ": erased under a live lease: " << m.status().ToString();
      EXPECT_TRUE(holder.ReleaseLease(id, "holder").ok());
    } else {
      EXPECT_EQ(lease.code(), StatusCode::kNotFound) << lease.ToString();
    }
    erase.join();
    EXPECT_EQ(holder.Read(id).status().code(), StatusCode::kNotFound) << "erased in the end";
  }
  std::printf("the holder got its lease first in %d of 100 races\n", leased);
}

TEST(RadosLeases, AReleasedLeaseStopsBlockingAtOnce) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  RadosManifests manifests(*conn);
  const auto id = Bytes("ns|released");
  ASSERT_TRUE(manifests.Commit(id, Bytes("b"), PutFamily(*conn, 14, 1, 100)).ok());
  ASSERT_TRUE(manifests.TakeLease(id, "node-a", 600s).ok());
  ASSERT_TRUE(manifests.TakeLease(id, "node-b", 600s).ok());
  EXPECT_EQ(manifests.Erase(id).code(), StatusCode::kBusy);
  ASSERT_TRUE(manifests.ReleaseLease(id, "node-a").ok());
  EXPECT_EQ(manifests.Erase(id).code(), StatusCode::kBusy) << "node-b still holds one";
  ASSERT_TRUE(manifests.ReleaseLease(id, "node-b").ok());
  EXPECT_TRUE(manifests.Erase(id).ok());
}

// Orphans (pages no manifest names) older than the grace are listed and
// removed; named pages and young orphans are not; a page a commit claims
// after the listing survives the reclaim of that listing.
TEST(RadosReclaim, ListsAndRemovesOnlyOldUnnamedPages) {
  auto conn = Connect(UriFor(UniqueNamespace(), 3000));
  ASSERT_TRUE(conn);
  const auto grace = 9s;  // 3 op timeouts
  RadosManifests manifests(*conn);
  RadosReclaim reclaim(*conn);
  EXPECT_EQ(reclaim.ListReclaimable(8s).status().code(), StatusCode::kInvalidArgument);

  auto named = PutFamily(*conn, 20, 3, 2048);
  auto orphans = PutFamily(*conn, 21, 4, 2048);
  ASSERT_TRUE(manifests.Commit(Bytes("kept"), Bytes("b"), named).ok());
  auto young = reclaim.ListReclaimable(grace);
  ASSERT_TRUE(young.ok()) << young.status().ToString();
  EXPECT_EQ(young->pages, 7u);
  EXPECT_EQ(young->manifests, 1u);
  EXPECT_EQ(young->named, 3u);
  EXPECT_EQ(young->too_young, 4u);
  EXPECT_TRUE(young->reclaimable.empty());

  std::this_thread::sleep_for(grace + 1500ms);
  auto old = reclaim.ListReclaimable(grace);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  ASSERT_EQ(old->reclaimable.size(), 4u);
  // A writer claims orphan 0 after the listing: its commit touches it.
  ASSERT_TRUE(manifests.Commit(Bytes("late"), Bytes("b"), std::span(orphans).first(1)).ok());
  auto removed = reclaim.Reclaim(old->reclaimable);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 3u);
  RadosPageStore pages(*conn);
  auto after = pages.ReadPages(orphans);
  EXPECT_TRUE(after[0].ok()) << "claimed by 'late' after the listing: kept";
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(after[i].status().code(), StatusCode::kNotFound);
  for (auto& got : pages.ReadPages(named)) EXPECT_TRUE(got.ok());
}

}  // namespace
}  // namespace auxstore::rados
