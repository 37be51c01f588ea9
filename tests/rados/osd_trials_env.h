// What the OSD kill trials share (rados_osd_trials_test at the RADOS level,
// shared_store_osd_trials_test at the store level): the cluster.sh commands
// on the ctest fixture's cluster, the wait for every PG active+clean, and
// the trials loop itself.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "tests/rados/rados_test_env.h"

namespace auxstore::rados::trials {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline int g_trials = 2;  // --trials=N, AUXSTORE_OSD_TRIALS

inline double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

inline std::string Cluster(const std::string& command, const std::string& arg = "") {
  return testenv::ClusterSh() + " " + command + " " + testenv::ClusterDir() + " " + arg;
}

// Every OSD up and in and every PG active+clean, seen twice a second apart
// (the mgr's PG stats lag); false after `bound`.
inline bool WaitActiveClean(std::chrono::seconds bound) {
  const std::string ceph = "ceph -c " + testenv::ConfPath() + " ";
  const std::string clean = ceph + "osd stat | grep -Eq '^3 osds: 3 up.*3 in' && " + ceph +
                            "pg stat | grep -Eq '^([0-9]+) pgs: \\1 active\\+clean;'";
  const auto deadline = Clock::now() + bound;
  int in_a_row = 0;
  while (Clock::now() < deadline) {
    in_a_row = testenv::Shell(clean) == 0 ? in_a_row + 1 : 0;
    if (in_a_row == 2) return true;
    std::this_thread::sleep_for(1s);
  }
  return false;
}

// Kills one OSD per trial (a different one each time) while the caller's
// writer and reader run: waits for 3 more acknowledged snapshots, kill-osd,
// 3 more with it dead, start-osd, 3 more, then every PG active+clean.
// `acked`: snapshots acknowledged so far; `reads`: what the reader did.
inline void RunTrials(const std::function<size_t()>& acked, const std::function<size_t()>& reads) {
  auto wait_acked = [&](size_t n) {
    const auto deadline = Clock::now() + 60s;
    while (acked() < n) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  };
  for (int t = 0; t < g_trials && !testing::Test::HasFailure(); ++t) {
    const std::string osd = std::to_string(t % 3);
    ASSERT_TRUE(wait_acked(acked() + 3));
    const auto killed = Clock::now();
    ASSERT_EQ(testenv::Shell(Cluster("kill-osd", osd)), 0);
    const size_t at_kill = acked();
    ASSERT_TRUE(wait_acked(at_kill + 3)) << "puts did not continue with osd." << osd << " dead";
    const double continued = Since(killed);
    const auto restart = Clock::now();
    ASSERT_EQ(testenv::Shell(Cluster("start-osd", osd)), 0);
    const double started = Since(restart);
    ASSERT_TRUE(wait_acked(acked() + 3));
    const auto recovering = Clock::now();
    ASSERT_TRUE(WaitActiveClean(180s)) << "trial " << t << ": not active+clean after 180 s";
    std::printf(
        "MEASURED trial %d: osd.%s killed; 3 more snapshots acknowledged after %.2f s; start-osd "
        "%.1f s; active+clean %.1f s later; %zu snapshots acknowledged, %zu reads\n",
        t, osd.c_str(), continued, started, Since(recovering), acked(), reads());
    std::fflush(stdout);
  }
}

// --trials=N (or AUXSTORE_OSD_TRIALS) from the command line, gtest's flags
// left to gtest; false (usage printed) on anything else.
inline bool ParseTrials(int argc, char** argv) {
  if (const char* env = std::getenv("AUXSTORE_OSD_TRIALS")) g_trials = std::atoi(env);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--trials=", 9) == 0) {
      g_trials = std::atoi(argv[i] + 9);
    } else {
      std::fprintf(stderr, "unknown argument %s (--trials=N, or gtest's)\n", argv[i]);
      return false;
    }
  }
  if (g_trials < 1) {
    std::fprintf(stderr, "--trials must be at least 1\n");
    return false;
  }
  return true;
}

}  // namespace auxstore::rados::trials
