// Battery 1: kill -9. A child process writes snapshots from several threads
// (WAL-path and SST-ingest-path sizes, kSync and kAsync cycles) and reports
// each acknowledged one over a pipe; the parent SIGKILLs it at a random
// moment, reopens the store and checks that every acknowledged snapshot
// reads back bit-exact (GetLayer and the host-backend restore pipeline), that
// every visible snapshot is complete, and that RocksDB's own checksums pass.
// A store lives for 5 cycles, so recovery after recovery is exercised too.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "auxstore/gpu_backend.h"
#include "auxstore/store.h"
#include "tests/reliability/crash_harness.h"
#include "tests/reliability/pipeline_restore_check.h"
#include "tests/reliability/store_checker.h"
#include "tests/support/test_util.h"

namespace auxstore::reliability {
namespace {

struct Totals {
  int cycles = 0;
  int kills_before_ready = 0;
  uint64_t acked = 0, acked_checked = 0, lost = 0, evicted = 0, torn = 0, wrong = 0, unexpected = 0,
           pipeline_restores = 0, writer_errors = 0;
  void Print(const char* name) const {
    std::printf(
        "RELIABILITY %s: cycles=%d kills_before_ready=%d acked=%llu acked_checks=%llu "
        "lost=%llu evicted=%llu torn_visible=%llu wrong_bytes=%llu unexpected=%llu "
        "pipeline_restores=%llu writer_errors=%llu\n",
        name, cycles, kills_before_ready, (unsigned long long)acked,
        (unsigned long long)acked_checked, (unsigned long long)lost, (unsigned long long)evicted,
        (unsigned long long)torn, (unsigned long long)wrong, (unsigned long long)unexpected,
        (unsigned long long)pipeline_restores, (unsigned long long)writer_errors);
  }
};

struct KillConfig {
  const char* name;
  int cycles;
  uint64_t capacity = 0;  // > 0: background eviction while writing
  uint64_t rng_seed;
};

void RunKillCycles(const KillConfig& cfg) {
  std::mt19937_64 rng(cfg.rng_seed);
  auto gpu = CreateBackend(BackendKind::kHost);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  testing::TempDir root;
  Totals t;
  std::string dir;
  std::set<uint64_t> attempted, acked;
  uint64_t seed_base = cfg.rng_seed * 1'000'000'000ull;
  for (int c = 0; c < cfg.cycles; ++c) {
    if (c % 5 == 0) {  // a fresh store every 5 cycles keeps each check bounded
      dir = root.Sub("store-" + std::to_string(c));
      attempted.clear();
      acked.clear();
    }
    const bool sync = c % 2 == 0;
    const bool before_ready = rng() % 5 == 0;
    const auto kill_after =
        std::chrono::milliseconds(before_ready ? rng() % 300 : 50 + rng() % 1200);
    std::vector<std::string> args = {"--store",     dir,
                                     "--mode",      sync ? "sync" : "async",
                                     "--threads",   std::to_string(1 + rng() % 4),
                                     "--seed-base", std::to_string(seed_base),
                                     "--capacity",  std::to_string(cfg.capacity)};
    seed_base += 1'000'000;
    WriterRun run = RunWriter(args, kill_after, before_ready);
    ++t.cycles;
    if (!run.ready) ++t.kills_before_ready;
    EXPECT_TRUE(run.open_error.empty()) << "cycle " << c << ": " << run.open_error;
    EXPECT_TRUE(run.errors.empty()) << "cycle " << c << ": " << run.errors.front();
    t.writer_errors += run.errors.size();
    attempted.insert(run.attempted.begin(), run.attempted.end());
    acked.insert(run.acked.begin(), run.acked.end());
    t.acked += run.acked.size();

    Options o;
    o.chunk_bytes = kBatteryChunkBytes;
    o.background_maintenance = false;  // nothing may change while we look
    auto opened = Store::Open(o, dir);
    ASSERT_TRUE(opened.ok()) << "cycle " << c
                             << ": reopen after kill -9: " << opened.status().ToString();
    auto store = std::move(opened).value();
    auto ns = store->RegisterNamespace(BatterySpec());
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    CheckOptions co;
    co.acked_may_be_evicted = cfg.capacity > 0;
    CheckReport r = CheckStore(*store, *ns, attempted, acked, co);
    EXPECT_TRUE(r.ok()) << "cycle " << c << " (" << (sync ? "sync" : "async")
                        << "): " << r.Summary();
    t.acked_checked += r.acked_checked;
    t.lost += r.lost;
    t.evicted += r.evicted;
    t.torn += r.torn_visible;
    t.wrong += r.wrong_bytes;
    t.unexpected += r.unexpected_visible;
    // Two acknowledged snapshots of this cycle through the restore pipeline.
    int restored = 0;
    for (uint64_t seed : run.acked) {
      if (restored == 2) break;
      if (!store->GetManifest(*ns, testing::PrefixFromSeed(seed)).ok()) continue;  // evicted
      Status s = RestoreAndCompare(*store, **gpu, *ns, MakeSnapshot(seed));
      EXPECT_TRUE(s.ok()) << "cycle " << c << " seed " << seed << ": " << s.ToString();
      ++restored;
      ++t.pipeline_restores;
    }
    store.reset();
    Status v = VerifyRocksFiles(dir);
    EXPECT_TRUE(v.ok()) << "cycle " << c << ": " << v.ToString();
    if (::testing::Test::HasFailure()) break;
  }
  t.Print(cfg.name);
  EXPECT_GT(t.acked, 0u) << "the writer never acknowledged a snapshot: the test proved nothing";
}

TEST(KillNine, WritersInSyncAndAsyncCycles) { RunKillCycles({"kill9", BatteryCycles(20), 0, 11}); }

TEST(KillNine, DuringBackgroundEviction) {
  // 6 MiB budget: a few snapshots in, eviction runs on every put.
  RunKillCycles({"kill9-eviction", std::max(4, BatteryCycles(20) / 2), 6u << 20, 12});
}

}  // namespace
}  // namespace auxstore::reliability
