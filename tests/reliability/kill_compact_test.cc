// kill -9 during `auxstore compact`: a store with erased snapshots (space to
// reclaim) and a byte budget (LRU evictions) is compacted by the real binary,
// which is SIGKILLed at a random moment. After each kill: the store opens,
// every snapshot compact had no reason to touch reads back bit-exact, every
// visible snapshot is complete and exact, nothing erased came back, and
// `auxstore verify` finds no corruption. Compact's budget evicts in LRU order
// (here: put order, nothing was read), so the kept snapshots gone after a
// kill are exactly the oldest ones, whatever moment the kill hit; a compact
// that finished evicted some. The run must have killed some compacts and let
// others finish.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <set>

#include "tests/reliability/crash_harness.h"
#include "tests/reliability/snapshot_spec.h"
#include "tests/reliability/store_checker.h"

namespace auxstore::reliability {
namespace {

TEST(KillNine, DuringCompact) {
  const int cycles = std::max(4, BatteryCycles(20) / 2);
  std::mt19937_64 rng(2026);
  int killed = 0, finished = 0;
  uint64_t checked = 0, erased_total = 0, evicted_total = 0;
  for (int c = 0; c < cycles; ++c) {
    testing::TempDir dir;
    const std::string path = dir.Sub("store");
    std::set<uint64_t> attempted, kept, erased;
    Options o;
    o.chunk_bytes = kBatteryChunkBytes;
    o.background_maintenance = false;
    uint64_t kept_bytes = 0;
    {
      auto store = Store::Open(o, path);
      ASSERT_TRUE(store.ok()) << store.status().ToString();
      const NamespaceId ns = (*store)->RegisterNamespace(BatterySpec()).value();
      for (uint64_t s = 0; s < 24; ++s) {
        const uint64_t seed = c * 1000 + s;
        SnapshotSpec spec = MakeSnapshot(seed);
        ASSERT_TRUE(
            (*store)
                ->PutSnapshot(ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options())
                .ok());
        attempted.insert(seed);
        if (s % 3 == 0) {
          ASSERT_TRUE((*store)->Erase(ns, spec.prefix).ok());
          erased.insert(seed);
        } else {
          kept.insert(seed);
          kept_bytes += spec.payload_bytes();
        }
      }
    }
    // Budget: compact evicts about half of what is kept.
    // Every fourth compact runs to its end; the others are killed within
    // about as long as a compact of this store runs here (~100-200 ms).
    const auto delay = c % 4 == 0 ? std::chrono::milliseconds(std::chrono::minutes(5))
                                  : std::chrono::milliseconds(rng() % 200);
    const int rc = RunKilledAfter(
        {AUXSTORE_CLI_BINARY, "compact", path, "--max-bytes", std::to_string(kept_bytes / 2)},
        delay);
    rc == -SIGKILL ? ++killed : ++finished;
    ASSERT_TRUE(rc == 0 || rc == -SIGKILL) << "compact exited with " << rc;

    auto store = Store::Open(o, path);
    ASSERT_TRUE(store.ok()) << "cycle " << c << ": " << store.status().ToString();
    const NamespaceId ns = NamespaceFingerprint(BatterySpec());
    CheckOptions co;
    co.acked_may_be_evicted = true;  // compact's --max-bytes evicts by design
    CheckReport r = CheckStore(**store, ns, attempted, kept, co);
    EXPECT_TRUE(r.ok()) << "cycle " << c << ": " << r.Summary();
    for (uint64_t seed : erased) {
      EXPECT_TRUE((*store)->GetManifest(ns, MakeSnapshot(seed).prefix).status().IsNotFound())
          << "erased snapshot " << seed << " came back";
    }
    // Eviction is LRU: what is gone of the kept ones is the oldest few.
    std::set<uint64_t> gone;
    for (uint64_t seed : kept) {
      if ((*store)->GetManifest(ns, MakeSnapshot(seed).prefix).status().IsNotFound()) {
        gone.insert(seed);
      }
    }
    size_t oldest = 0;
    for (uint64_t seed : kept) {  // std::set: put order (seeds rise with time)
      if (!gone.count(seed)) break;
      ++oldest;
    }
    EXPECT_EQ(oldest, gone.size()) << "cycle " << c << ": compact evicted " << gone.size()
                                   << " snapshots, not the oldest " << gone.size();
    if (rc == 0) {
      EXPECT_FALSE(gone.empty()) << "cycle " << c << ": a finished compact evicted nothing";
    }
    evicted_total += gone.size();
    checked += r.acked_checked;
    erased_total += erased.size();
    store->reset();
    const int verify =
        RunKilledAfter({AUXSTORE_CLI_BINARY, "verify", path, "--json"}, std::chrono::minutes(5));
    EXPECT_EQ(verify, 0) << "cycle " << c << ": verify found corruption after a killed compact";
  }
  std::printf(
      "RELIABILITY kill9-compact: cycles=%d killed=%d finished=%d acked_checks=%llu "
      "erased_checked=%llu evicted=%llu\n",
      cycles, killed, finished, (unsigned long long)checked, (unsigned long long)erased_total,
      (unsigned long long)evicted_total);
  EXPECT_GT(killed, 0) << "no compact was killed: the test proved nothing about kills";
  EXPECT_GT(finished, 0) << "no compact finished: its evictions went unchecked";
}

}  // namespace
}  // namespace auxstore::reliability
