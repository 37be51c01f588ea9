// Trust finding 8: an acknowledged erase never comes back. A child
// (auxstore_trust_child, C ABI) puts small snapshots (sync, through the WAL),
// then auxstore_erase's the last one (AUXSTORE_OK), prints ERASED and is
// SIGKILLed at once. For each k in 100..140 (step 4), on a copy: the live
// WAL's tail is cut by k bytes (what a lost tail of a file looks like). Open
// for writing (a child) must either refuse with AUXSTORE_CORRUPTION ("lost
// committed" in the message) or open with the erased snapshot absent; the
// snapshots acknowledged before the erase must then read back exactly.
// Opening with the erased snapshot back fails the test.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "tests/trust/trust_capi.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

constexpr uint64_t kPuts = 6, kErased = 6;

TEST(TrustAckedErase, ATornWalTailNeverBringsAnErasedSnapshotBack) {
  ScratchDir dir("acked-erase");
  const std::string store = dir.Sub("store");
  ProcResult w =
      RunProcess({ChildPath(), "put", "--store", store, "--profile", "small", "--seeds",
                  "1-" + std::to_string(kPuts), "--erase", std::to_string(kErased), "--hang"},
                 /*kill_on_line=*/"ERASED");
  ASSERT_TRUE(w.FirstLineWith("ERASED " + std::to_string(kErased)))
      << "the erase was not acknowledged: " << w.Describe() << "\n"
      << w.out << w.ErrTail();
  ASSERT_EQ(w.signal, SIGKILL) << w.Describe();
  const std::set<uint64_t> acked = SeedsOnLines(w.lines, "A");
  ASSERT_EQ(acked.size(), kPuts);

  // The live WAL: the newest non-empty *.log.
  std::string wal;
  for (const auto& f : FilesOfType(store, "WAL")) {
    if (FileSize(store + "/" + f) > 0) wal = f;
  }
  ASSERT_FALSE(wal.empty()) << "no non-empty WAL in " << store << ":\n"
                            << ListingToString(List(store));
  const uint64_t wal_size = FileSize(store + "/" + wal);
  std::printf("live WAL %s: %llu bytes\n", wal.c_str(), (unsigned long long)wal_size);

  int refused = 0, absent = 0, came_back = 0, other = 0;
  std::vector<uint64_t> seeds(acked.begin(), acked.end());
  for (uint64_t k = 100; k <= 140; k += 4) {
    const std::string copy = dir.Sub("cut-" + std::to_string(k));
    std::string why;
    ASSERT_TRUE(CopyTree(store, copy, &why)) << why;
    ASSERT_EQ(::truncate((copy + "/" + wal).c_str(), static_cast<off_t>(wal_size - k)), 0);
    ProcResult r = RunProcess(
        {ChildPath(), "read", "--store", copy, "--profile", "small", "--seeds", SeedList(seeds)});
    const ReadReport rep = ParseRead(r);
    const std::string tag = "WAL " + wal + " cut by " + std::to_string(k) + " bytes (" +
                            std::to_string(wal_size) + " -> " + std::to_string(wal_size - k) +
                            "): ";
    if (!r.Exited(0)) {
      ++other;
      ADD_FAILURE() << tag << "the opening child " << r.Describe() << "\n" << r.ErrTail();
      continue;
    }
    std::string outcome;
    if (!rep.opened) {
      if (rep.open_code == AUXSTORE_CORRUPTION &&
          rep.open_message.find("lost committed") != std::string::npos) {
        ++refused;
        outcome = "refused (lost committed)";
      } else {
        ++other;
        outcome = "refused otherwise";
        ADD_FAILURE() << tag << "open failed with " << rep.open_code << " (" << rep.open_message
                      << "); want AUXSTORE_CORRUPTION with \"lost committed\" "
                      << "or an open without the erased snapshot";
      }
    } else {
      const ReadVerdict& e = rep.seeds.at(kErased);
      if (e.verdict == "absent") {
        ++absent;
        outcome = "opened, erased snapshot absent";
      } else {
        ++came_back;
        outcome = "opened, ERASED SNAPSHOT BACK (" + e.verdict + ")";
        ADD_FAILURE() << tag << "the store opened and snapshot seed " << kErased
                      << ", erased with AUXSTORE_OK before the kill, is back: get_manifest/"
                      << "get_layer say " << e.verdict << " " << e.detail;
      }
      for (uint64_t s : seeds) {
        if (s == kErased) continue;
        const ReadVerdict& v = rep.seeds.at(s);
        EXPECT_EQ(v.verdict, "exact") << tag << "acknowledged seed " << s
                                      << " (not erased): " << v.verdict << " " << v.detail;
      }
    }
    std::printf("cut %3llu: %s\n", (unsigned long long)k, outcome.c_str());
  }
  std::printf(
      "TRUST acked-erase: cuts=11 refused_lost_committed=%d opened_erased_absent=%d "
      "opened_ERASED_BACK=%d other=%d\n",
      refused, absent, came_back, other);
}

}  // namespace
}  // namespace auxstore::trust
