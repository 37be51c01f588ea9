// Battery 2: power loss. The writer child runs on FaultFs, which logs every
// sync, create, rename, link and directory sync; the parent SIGKILLs it, then
// replays the log and does what a power cut may do (power_cut.h): every
// unsynced tail dropped, kept in part or whole, or kept with garbage in it,
// the durable watermark's included; in harsh cycles each directory entry
// never synced also dropped or kept. Then Store::Open must either succeed with every
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
           unexpected = 0, dropped_bytes = 0, removed_files = 0, kept_tails = 0, garbled_tails = 0,
           kept_entries = 0;
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
    const uint64_t cut_seed = rng();
    PowerCutReport cut = ApplyPowerCut(log, {harsh, /*tails=*/true, cut_seed});
    dropped_bytes += cut.bytes_dropped;
    removed_files += cut.files_removed;
    kept_tails += cut.tails_kept;
    garbled_tails += cut.tails_garbled;
    kept_entries += cut.entries_kept;
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
                    << " cut (seed " << cut_seed << ": " << cut.Summary()
                    << "): " << opened.status().ToString() << " (store and event log kept in "
                    << keep << ")\nwhat the cut did:\n"
                    << cut.changes;
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
      "open_refused=%d bytes_dropped=%llu files_removed=%llu tails_kept=%llu "
      "tails_garbled=%llu entries_kept=%llu\n",
      run_cycles, harsh_cycles, (unsigned long long)acked_total,
      (unsigned long long)sync_acked_total, (unsigned long long)checked, (unsigned long long)lost,
      (unsigned long long)torn, (unsigned long long)wrong, (unsigned long long)unexpected, refused,
      (unsigned long long)dropped_bytes, (unsigned long long)removed_files,
      (unsigned long long)kept_tails, (unsigned long long)garbled_tails,
      (unsigned long long)kept_entries);
  EXPECT_GT(sync_acked_total, 0u);
  EXPECT_GT(dropped_bytes, 0u) << "no cut dropped anything: the simulation proved nothing";
  if (run_cycles >= 10) {
    // Every kind of damage the model claims was dealt at least once.
    EXPECT_GT(kept_tails, 0u) << "no cut kept part of an unsynced tail";
    EXPECT_GT(garbled_tails, 0u) << "no cut left garbage in an unsynced tail";
    EXPECT_GT(removed_files, 0u) << "no harsh cut dropped an unsynced entry";
    EXPECT_GT(kept_entries, 0u) << "no harsh cut kept an unsynced entry";
  }
}

// The negative control: a "cut" that drops bytes the writer had synced (every
// WAL emptied, the watermark removed so the store's own check cannot save the
// day) must be caught by this test's oracle: if the store opens, acknowledged
// snapshots are missing and CheckStore says so.
TEST(PowerLoss, TheOracleCatchesACutThatDropsSyncedBytes) {
  testing::TempDir root;
  const std::string dir = root.Sub("store");
  WriterRun run = RunWriter({"--store", dir, "--mode", "sync", "--threads", "2", "--seed-base",
                             "77000000000", "--event-log", root.Sub("events.log")},
                            std::chrono::milliseconds(800), false);
  ASSERT_TRUE(run.open_error.empty()) << run.open_error;
  ASSERT_FALSE(run.acked.empty()) << "the writer acknowledged nothing in 800 ms";
  uint64_t emptied = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".log" && name != "LOG" && std::filesystem::file_size(e) > 0) {
      std::filesystem::resize_file(e.path(), 0);
      ++emptied;
    }
  }
  std::filesystem::remove(dir + "/AUXSTORE-WATERMARK");
  ASSERT_GT(emptied, 0u) << "no WAL held anything: the control damaged nothing";
  Options o;
  o.chunk_bytes = kBatteryChunkBytes;
  o.background_maintenance = false;
  auto opened = Store::Open(o, dir);
  if (!opened.ok()) {
    std::printf("control: open refused: %s\n", opened.status().ToString().c_str());
    return;  // refused: the test above counts that as a failure too
  }
  auto store = std::move(opened).value();
  auto ns = store->RegisterNamespace(BatterySpec());
  ASSERT_TRUE(ns.ok()) << ns.status().ToString();
  CheckReport r = CheckStore(*store, *ns, run.attempted, run.acked);
  std::printf("control: %s\n", r.Summary().c_str());
  EXPECT_FALSE(r.ok()) << "synced bytes dropped and the oracle saw nothing wrong";
  EXPECT_GT(r.lost, 0u);
}

}  // namespace
}  // namespace auxstore::reliability
