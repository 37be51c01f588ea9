// Battery 2: power loss. The writer child runs on FaultFs, which logs every
// sync, create, rename, link and directory sync; the parent SIGKILLs it, then
// replays the log and drops every byte a power cut could drop (power_cut.h):
// unsynced tails always, and in harsh cycles also files whose directory entry
// was never synced. Then Store::Open must either succeed with every
// snapshot acknowledged in kSync mode present and bit-exact, or refuse with a
// clear error; it must never open with one silently missing. Visible
// snapshots (kAsync ones included) must never be torn.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "auxstore/store.h"
#include "tests/reliability/crash_harness.h"
#include "tests/reliability/power_cut.h"
#include "tests/reliability/snapshot_spec.h"
#include "tests/reliability/store_checker.h"
#include "tests/support/test_util.h"

namespace auxstore::reliability {
namespace {

TEST(PowerLoss, SyncAcknowledgedSnapshotsSurviveEveryCut) {
  const int cycles = BatteryCycles(20);
  std::mt19937_64 rng(21);
  testing::TempDir root;
  std::string dir;
  std::set<uint64_t> attempted, sync_acked;
  uint64_t seed_base = 21'000'000'000ull;
  int run_cycles = 0, harsh_cycles = 0, refused = 0;
  uint64_t acked_total = 0, sync_acked_total = 0, checked = 0, lost = 0, torn = 0, wrong = 0,
           unexpected = 0, dropped_bytes = 0, removed_files = 0;
  for (int c = 0; c < cycles; ++c) {
    if (c % 5 == 0) {
      dir = root.Sub("store-" + std::to_string(c));
      attempted.clear();
      sync_acked.clear();
    }
    const bool sync = c % 3 != 2;  // every third cycle writes kAsync
    const bool harsh = c % 2 == 1;
    const std::string log = root.Sub("events-" + std::to_string(c) + ".log");
    const bool before_ready = rng() % 6 == 0;
    const auto kill_after =
        std::chrono::milliseconds(before_ready ? rng() % 300 : 50 + rng() % 1000);
    WriterRun run = RunWriter({"--store", dir, "--mode", sync ? "sync" : "async", "--threads",
                               std::to_string(1 + rng() % 4), "--seed-base",
                               std::to_string(seed_base), "--event-log", log},
                              kill_after, before_ready);
    seed_base += 1'000'000;
    ++run_cycles;
    harsh_cycles += harsh;
    EXPECT_TRUE(run.open_error.empty()) << "cycle " << c << ": " << run.open_error;
    EXPECT_TRUE(run.errors.empty()) << "cycle " << c << ": " << run.errors.front();
    PowerCutReport cut = ApplyPowerCut(log, harsh);
    dropped_bytes += cut.bytes_dropped;
    removed_files += cut.files_removed;
    attempted.insert(run.attempted.begin(), run.attempted.end());
    acked_total += run.acked.size();
    if (sync) {
      sync_acked.insert(run.acked.begin(), run.acked.end());
      sync_acked_total += run.acked.size();
    }

    Options o;
    o.chunk_bytes = kBatteryChunkBytes;
    o.background_maintenance = false;
    auto opened = Store::Open(o, dir);
    if (!opened.ok()) {
      // A store that will not open after a power cut is lost to its engine:
      // a failure. The event log and the cut directory are kept to study.
      ++refused;
      const std::string keep = ::testing::TempDir() + "power-loss-refusal-" + std::to_string(c);
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
      std::filesystem::create_directories(keep, ec);
      std::filesystem::copy(dir, keep + "/store", std::filesystem::copy_options::recursive, ec);
      std::filesystem::copy_file(log, keep + "/events.log", ec);
      ADD_FAILURE() << "cycle " << c << ": open refused after " << (harsh ? "harsh" : "plain")
                    << " cut (" << cut.Summary() << "): " << opened.status().ToString()
                    << " (store and event log kept in " << keep << ")";
      break;
    }
    auto store = std::move(opened).value();
    auto ns = store->RegisterNamespace(BatterySpec());
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    CheckReport r = CheckStore(*store, *ns, attempted, sync_acked);
    EXPECT_TRUE(r.ok()) << "cycle " << c << " (" << (harsh ? "harsh" : "plain") << " cut, "
                        << (sync ? "sync" : "async") << ", " << cut.Summary()
                        << "): " << r.Summary();
    checked += r.acked_checked;
    lost += r.lost;
    torn += r.torn_visible;
    wrong += r.wrong_bytes;
    unexpected += r.unexpected_visible;
    store.reset();
    Status v = VerifyRocksFiles(dir);
    EXPECT_TRUE(v.ok()) << "cycle " << c << ": " << v.ToString();
    if (::testing::Test::HasFailure()) break;
  }
  std::printf(
      "RELIABILITY power-loss: cycles=%d harsh=%d acked=%llu sync_acked=%llu "
      "sync_acked_checks=%llu lost=%llu torn_visible=%llu wrong_bytes=%llu unexpected=%llu "
      "open_refused=%d bytes_dropped=%llu files_removed=%llu\n",
      run_cycles, harsh_cycles, (unsigned long long)acked_total,
      (unsigned long long)sync_acked_total, (unsigned long long)checked, (unsigned long long)lost,
      (unsigned long long)torn, (unsigned long long)wrong, (unsigned long long)unexpected, refused,
      (unsigned long long)dropped_bytes, (unsigned long long)removed_files);
  EXPECT_GT(sync_acked_total, 0u);
  EXPECT_GT(dropped_bytes, 0u) << "no cut dropped anything: the simulation proved nothing";
}

}  // namespace
}  // namespace auxstore::reliability
