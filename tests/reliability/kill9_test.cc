// Battery 1: kill -9. A child process writes snapshots from several threads
// (WAL-path and SST-ingest-path sizes, kSync and kAsync cycles) and reports
// each acknowledged one over a pipe; the parent SIGKILLs it at a random
// moment, reopens the store and checks that every acknowledged snapshot
// reads back bit-exact (GetLayer and the host-backend restore pipeline), that
// every visible snapshot is complete, and that RocksDB's own checksums pass.
// A store lives for 5 cycles, so recovery after recovery is exercised too.
//
// Scale (issue 20 break 6): store lives run in parallel workers (each cycle
// is mostly a wall-clock writer window, so workers overlap well even on 2
// cores; AUXSTORE_KILL9_WORKERS, default 4), and a store is removed as soon
// as its last cycle is checked: only a store whose check failed is kept
// (moved out of the temporary root, its path printed). Disk use is therefore
// bounded by the workers' live stores; the peak seen and the time per cycle
// are printed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "auxstore/gpu_backend.h"
#include "auxstore/store.h"
#include "tests/reliability/crash_harness.h"
#include "tests/reliability/pipeline_restore_check.h"
#include "tests/reliability/store_checker.h"
#include "tests/support/test_util.h"

namespace auxstore::reliability {
namespace {

namespace fs = std::filesystem;

constexpr int kCyclesPerStore = 5;

struct Totals {
  int cycles = 0;
  int kills_before_ready = 0;
  uint64_t acked = 0, acked_checked = 0, lost = 0, evicted = 0, torn = 0, wrong = 0, unexpected = 0,
           pipeline_restores = 0, writer_errors = 0;
  uint64_t stores_removed = 0, stores_kept = 0, peak_disk = 0, max_store = 0;
  void Add(const Totals& o) {
    cycles += o.cycles;
    kills_before_ready += o.kills_before_ready;
    acked += o.acked;
    acked_checked += o.acked_checked;
    lost += o.lost;
    evicted += o.evicted;
    torn += o.torn;
    wrong += o.wrong;
    unexpected += o.unexpected;
    pipeline_restores += o.pipeline_restores;
    writer_errors += o.writer_errors;
  }
  void Print(const char* name, int workers, double seconds) const {
    std::printf(
        "RELIABILITY %s: cycles=%d kills_before_ready=%d acked=%llu acked_checks=%llu "
        "lost=%llu evicted=%llu torn_visible=%llu wrong_bytes=%llu unexpected=%llu "
        "pipeline_restores=%llu writer_errors=%llu\n",
        name, cycles, kills_before_ready, (unsigned long long)acked,
        (unsigned long long)acked_checked, (unsigned long long)lost, (unsigned long long)evicted,
        (unsigned long long)torn, (unsigned long long)wrong, (unsigned long long)unexpected,
        (unsigned long long)pipeline_restores, (unsigned long long)writer_errors);
    const double per = cycles > 0 ? seconds / cycles : 0;
    std::printf(
        "RELIABILITY %s: workers=%d wall=%.1fs per_cycle=%.2fs (1000 cycles: ~%.0f min); "
        "stores removed=%llu kept(failed)=%llu; disk: largest store %.1f MB, peak under the "
        "root %.1f MB\n",
        name, workers, seconds, per, per * 1000 / 60, (unsigned long long)stores_removed,
        (unsigned long long)stores_kept, max_store / 1e6, peak_disk / 1e6);
  }
};

struct KillConfig {
  const char* name;
  int cycles;
  uint64_t capacity = 0;  // > 0: background eviction while writing
  uint64_t rng_seed;
};

int Workers() {
  if (const char* e = std::getenv("AUXSTORE_KILL9_WORKERS")) {
    const int n = std::atoi(e);
    if (n > 0) return n;
  }
  return 4;
}

uint64_t DiskBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) n += it->file_size(e2);
  }
  return n;
}

// One store's life: cycles [first, first + count). Failures are collected
// in *failures (empty: the store passed every check).
void RunStoreLife(const KillConfig& cfg, int life, int first, int count, const std::string& dir,
                  GpuBackend& gpu, Totals* t, std::vector<std::string>* failures) {
  auto fail = [&](const std::string& what) { failures->push_back(what); };
  std::mt19937_64 rng(cfg.rng_seed * 1'000'003ull + static_cast<uint64_t>(life));
  std::set<uint64_t> attempted, acked;
  for (int c = first; c < first + count && failures->empty(); ++c) {
    const std::string tag = "cycle " + std::to_string(c) + " (store " + dir + ")";
    const bool sync = c % 2 == 0;
    const bool before_ready = rng() % 5 == 0;
    const auto kill_after =
        std::chrono::milliseconds(before_ready ? rng() % 300 : 50 + rng() % 1200);
    const uint64_t seed_base = cfg.rng_seed * 1'000'000'000ull + uint64_t(c) * 1'000'000;
    std::vector<std::string> args = {"--store",     dir,
                                     "--mode",      sync ? "sync" : "async",
                                     "--threads",   std::to_string(1 + rng() % 4),
                                     "--seed-base", std::to_string(seed_base),
                                     "--capacity",  std::to_string(cfg.capacity)};
    WriterRun run = RunWriter(args, kill_after, before_ready);
    ++t->cycles;
    if (!run.ready) ++t->kills_before_ready;
    if (!run.open_error.empty()) fail(tag + ": " + run.open_error);
    if (!run.killed) {
      fail(tag + ": the writer ended before it was killed (exit " + std::to_string(run.exit_code) +
           ")");
    }
    if (!run.errors.empty()) fail(tag + ": " + run.errors.front());
    t->writer_errors += run.errors.size();
    attempted.insert(run.attempted.begin(), run.attempted.end());
    acked.insert(run.acked.begin(), run.acked.end());
    t->acked += run.acked.size();

    Options o;
    o.chunk_bytes = kBatteryChunkBytes;
    o.background_maintenance = false;  // nothing may change while we look
    auto opened = Store::Open(o, dir);
    if (!opened.ok()) {
      fail(tag + ": reopen after kill -9: " + opened.status().ToString());
      return;
    }
    auto store = std::move(opened).value();
    auto ns = store->RegisterNamespace(BatterySpec());
    if (!ns.ok()) {
      fail(tag + ": " + ns.status().ToString());
      return;
    }
    CheckOptions co;
    co.acked_may_be_evicted = cfg.capacity > 0;
    CheckReport r = CheckStore(*store, *ns, attempted, acked, co);
    if (!r.ok()) fail(tag + " (" + (sync ? "sync" : "async") + "): " + r.Summary());
    t->acked_checked += r.acked_checked;
    t->lost += r.lost;
    t->evicted += r.evicted;
    t->torn += r.torn_visible;
    t->wrong += r.wrong_bytes;
    t->unexpected += r.unexpected_visible;
    // Two acknowledged snapshots of this cycle through the restore pipeline.
    int restored = 0;
    for (uint64_t seed : run.acked) {
      if (restored == 2) break;
      if (!store->GetManifest(*ns, testing::PrefixFromSeed(seed)).ok()) continue;  // evicted
      Status s = RestoreAndCompare(*store, gpu, *ns, MakeSnapshot(seed));
      if (!s.ok()) fail(tag + " seed " + std::to_string(seed) + ": " + s.ToString());
      ++restored;
      ++t->pipeline_restores;
    }
    store.reset();
    Status v = VerifyRocksFiles(dir);
    if (!v.ok()) fail(tag + ": " + v.ToString());
  }
}

void RunKillCycles(const KillConfig& cfg) {
  const auto start = std::chrono::steady_clock::now();
  testing::TempDir root;
  const int lives = (cfg.cycles + kCyclesPerStore - 1) / kCyclesPerStore;
  const int workers = std::max(1, std::min(Workers(), lives));
  std::atomic<int> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  Totals total;
  std::vector<std::string> failures;
  auto worker = [&] {
    auto gpu = CreateBackend(BackendKind::kHost);
    if (!gpu.ok()) {
      std::lock_guard lock(mu);
      failures.push_back("host backend: " + gpu.status().ToString());
      return;
    }
    for (int life; !stop && (life = next++) < lives;) {
      const int first = life * kCyclesPerStore;
      const int count = std::min(kCyclesPerStore, cfg.cycles - first);
      const std::string dir = root.Sub("store-" + std::to_string(first));
      Totals t;
      std::vector<std::string> mine;
      RunStoreLife(cfg, life, first, count, dir, **gpu, &t, &mine);
      const uint64_t store_bytes = DiskBytes(dir);
      const uint64_t root_bytes = DiskBytes(root.path());
      std::string kept;
      if (mine.empty()) {
        std::error_code ec;
        fs::remove_all(dir, ec);
      } else {  // kept for a look: out of the root, which goes at the end
        kept = fs::temp_directory_path() / ("auxstore-kill9-failed-" + std::string(cfg.name) +
                                            "-store-" + std::to_string(first));
        std::error_code ec;
        fs::remove_all(kept, ec);
        fs::rename(dir, kept, ec);
        mine.push_back("the store is kept at " + (ec ? dir + " (move failed)" : kept));
        stop = true;
      }
      std::lock_guard lock(mu);
      total.Add(t);
      (mine.empty() ? total.stores_removed : total.stores_kept)++;
      total.max_store = std::max(total.max_store, store_bytes);
      total.peak_disk = std::max(total.peak_disk, root_bytes);
      failures.insert(failures.end(), mine.begin(), mine.end());
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) threads.emplace_back(worker);
  for (auto& th : threads) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  total.Print(cfg.name, workers, seconds);
  for (const auto& f : failures) ADD_FAILURE() << f;
  if (failures.empty()) {
    EXPECT_EQ(total.stores_removed, static_cast<uint64_t>(lives))
        << "every checked store must be removed";
  }
  EXPECT_GT(total.acked, 0u) << "the writer never acknowledged a snapshot: the test proved nothing";
}

TEST(KillNine, WritersInSyncAndAsyncCycles) { RunKillCycles({"kill9", BatteryCycles(20), 0, 11}); }

TEST(KillNine, DuringBackgroundEviction) {
  // 6 MiB budget: a few snapshots in, eviction runs on every put.
  RunKillCycles({"kill9-eviction", std::max(4, BatteryCycles(20) / 2), 6u << 20, 12});
}

}  // namespace
}  // namespace auxstore::reliability
