// kill -9 during `auxstore compact`: a store with erased snapshots (space to
// reclaim) and a byte budget (LRU evictions) is compacted by the real binary,
// which is SIGKILLed at a random moment. After each kill: the store opens,
// every snapshot compact had no reason to touch reads back bit-exact, every
// visible snapshot is complete and exact, nothing erased came back, and
// `auxstore verify` finds no corruption.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "tests/reliability/crash_harness.h"
#include "tests/reliability/snapshot_spec.h"
#include "tests/reliability/store_checker.h"

extern char** environ;

namespace auxstore::reliability {
namespace {

// Runs `argv`; SIGKILLs it after `kill_after` unless it exited first.
// Returns its exit code, or -SIGKILL when killed.
int RunAndMaybeKill(std::vector<std::string> args, std::chrono::milliseconds kill_after) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return -1000;
  posix_spawn_file_actions_destroy(&fa);
  const auto deadline = std::chrono::steady_clock::now() + kill_after;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -SIGKILL;
}

TEST(KillNine, DuringCompact) {
  const int cycles = std::max(4, BatteryCycles(20) / 2);
  std::mt19937_64 rng(2026);
  int killed = 0, finished = 0;
  uint64_t checked = 0, erased_total = 0;
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
    const auto delay = std::chrono::milliseconds(rng() % 1500);
    const int rc = RunAndMaybeKill(
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
    checked += r.acked_checked;
    erased_total += erased.size();
    store->reset();
    const int verify =
        RunAndMaybeKill({AUXSTORE_CLI_BINARY, "verify", path, "--json"}, std::chrono::minutes(5));
    EXPECT_EQ(verify, 0) << "cycle " << c << ": verify found corruption after a killed compact";
  }
  std::printf(
      "RELIABILITY kill9-compact: cycles=%d killed=%d finished=%d acked_checks=%llu "
      "erased_checked=%llu\n",
      cycles, killed, finished, (unsigned long long)checked, (unsigned long long)erased_total);
}

}  // namespace
}  // namespace auxstore::reliability
