// Trust finding 3: a full disk, then close, then reopen. A real 8 MiB tmpfs is
// mounted (the test is skipped where mounting is not allowed). Each trial:
//  1. a child (auxstore_trust_child, C ABI) opens a store on the tmpfs and
//     puts WAL-path snapshots (sync) until a put fails (IOError or Unavailable), then
//     calls auxstore_close. The child must exit normally: no abort in close.
//  2. the disk is kept full (a filler file this test controls takes every
//     free byte) and a child reopens the store. It either opens, or fails with
//     AUXSTORE_IO_ERROR and a message saying "needs N bytes free" - and then
//     it must have left the directory exactly as it was (same names, sizes).
//  3. N bytes are freed (the filler shrunk) and the store must open, with
//     every acknowledged snapshot reading back exactly.
// The tmpfs is unmounted at the end, also when the test fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/trust/trust_capi.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

struct Totals {
  int trials = 0, close_crashed = 0, put_failed_oddly = 0, reopen_full_ok = 0,
      reopen_full_refused_with_n = 0, reopen_full_refused_other = 0, dir_changed = 0,
      final_open_failed = 0, acked_not_exact = 0;
  uint64_t acked = 0;
};

// Reads every acknowledged seed; "" when all exact, else what was wrong.
std::string CheckAcked(const ReadReport& rep, const std::set<uint64_t>& acked) {
  std::string bad;
  for (uint64_t s : acked) {
    auto it = rep.seeds.find(s);
    if (it == rep.seeds.end()) {
      bad += "\n    seed " + std::to_string(s) + ": not read (child stopped early)";
    } else if (it->second.verdict != "exact") {
      bad +=
          "\n    seed " + std::to_string(s) + ": " + it->second.verdict + " " + it->second.detail;
    }
  }
  return bad;
}

TEST(TrustFullDisk, CloseDoesNotAbortAndReopenSaysWhatItNeeds) {
  ScratchDir scratch("full-disk");
  std::string why;
  auto mnt = TmpfsMount::Mount(scratch.Sub("mnt"), 8u << 20, &why);
  if (!mnt) GTEST_SKIP() << "mounting a tmpfs is not allowed here (" << why << ")";
  const int trials = Cycles(8);
  Totals t;
  for (int trial = 0; trial < trials; ++trial) {
    ++t.trials;
    mnt->Clear();
    const std::string store = mnt->path() + "/store";
    const std::string filler = mnt->path() + "/filler";
    // Both WAL-path profiles: "wal" fills the disk in ~40 puts and fails in
    // the WAL append; "small" takes ~500 and fails in the WAL or the watermark.
    const std::string profile = trial % 2 == 0 ? "small" : "wal";
    const std::string tag = "trial " + std::to_string(trial) + " (" + profile + "): ";

    // 1. fill the disk with puts, then close. A 2 MiB reserve file keeps
    //    room this test can hand back later (the filler below takes it).
    const std::string reserve = mnt->path() + "/reserve";
    ASSERT_TRUE(WriteFile(reserve, std::string(2u << 20, 'R'), 0600)) << "cannot write " << reserve;
    ProcResult w = RunProcess({ChildPath(), "put", "--store", store, "--profile", profile,
                               "--until-fail", "--seed-start", std::to_string(trial * 1000 + 1)});
    const std::set<uint64_t> acked = SeedsOnLines(w.lines, "A");
    t.acked += acked.size();
    const auto failed_put = w.FirstLineWith("E ");
    if (!w.FirstLineWith("OPEN OK")) {
      ADD_FAILURE() << tag << "the writer could not open a fresh store on the tmpfs: " << w.out
                    << w.ErrTail();
      continue;
    }
    if (failed_put) {
      std::istringstream in(*failed_put);
      std::string e;
      uint64_t seed;
      int code = -1;
      in >> e >> seed >> code;
      if (code != AUXSTORE_IO_ERROR && code != AUXSTORE_UNAVAILABLE) {
        ++t.put_failed_oddly;
        ADD_FAILURE() << tag << "the put that hit the full disk failed with code " << code
                      << ", not IOError/Unavailable: " << *failed_put;
      }
    }
    if (!w.Exited(0) || !w.FirstLineWith("CLOSED")) {
      ++t.close_crashed;
      ADD_FAILURE() << tag << "the writer child " << w.Describe() << " after " << acked.size()
                    << " acknowledged puts and the failed put [" << failed_put.value_or("none")
                    << "] - " << (w.FirstLineWith("CLOSED") ? "after" : "inside")
                    << " auxstore_close. stderr:\n"
                    << w.ErrTail();
    }

    // 2. reopen with the disk still full (the filler takes the reserve and
    //    whatever the store left)
    ::unlink(reserve.c_str());
    FillUp(filler);
    const Listing before = List(store);
    ProcResult r1 = RunProcess(
        {ChildPath(), "read", "--store", store, "--profile", profile, "--seeds", SeedList(acked)});
    const Listing after = List(store);
    ReadReport rep1 = ParseRead(r1);
    if (!r1.Exited(0)) {
      ADD_FAILURE() << tag << "reopen on the full disk: the child " << r1.Describe() << "\n"
                    << r1.ErrTail();
    }
    uint64_t need = 0;
    bool need_known = false;
    if (rep1.opened) {
      ++t.reopen_full_ok;
      const std::string bad = CheckAcked(rep1, acked);
      if (!bad.empty()) {
        ++t.acked_not_exact;
        ADD_FAILURE() << tag << "reopen on the full disk succeeded but acknowledged snapshots "
                      << "did not read back exactly:" << bad;
      }
    } else if (r1.Exited(0)) {
      std::smatch m;
      const std::regex needs("needs ([0-9]+) bytes free");
      if (rep1.open_code == AUXSTORE_IO_ERROR && std::regex_search(rep1.open_message, m, needs)) {
        ++t.reopen_full_refused_with_n;
        need = std::stoull(m[1].str());
        need_known = true;
      } else {
        ++t.reopen_full_refused_other;
        ADD_FAILURE() << tag << "reopen on the full disk failed with " << rep1.open_code << " ("
                      << auxstore_code_name(rep1.open_code) << ") and a message that does not "
                      << "say how many bytes it needs free (want AUXSTORE_IO_ERROR with "
                      << "\"needs N bytes free\"): " << rep1.open_message;
      }
      const std::string diff = DiffListings(before, after, /*compare_modes=*/false);
      if (!diff.empty()) {
        ++t.dir_changed;
        ADD_FAILURE() << tag << "the refused reopen changed the store directory " << store << ":\n"
                      << diff;
      }
    }

    // 3. free what it asked for (everything, when it did not say) and reopen
    if (!rep1.opened || !r1.Exited(0)) {
      const uint64_t have = FileSize(filler);
      const uint64_t free_bytes = need_known ? ((need + 4095) / 4096) * 4096 : have;
      if (free_bytes >= have) {
        ::unlink(filler.c_str());
      } else {
        (void)!::truncate(filler.c_str(), static_cast<off_t>(have - free_bytes));
      }
      ProcResult r2 = RunProcess({ChildPath(), "read", "--store", store, "--profile", profile,
                                  "--seeds", SeedList(acked)});
      ReadReport rep2 = ParseRead(r2);
      if (!r2.Exited(0) || !rep2.opened) {
        ++t.final_open_failed;
        ADD_FAILURE() << tag << "after freeing " << free_bytes << " bytes"
                      << (need_known ? " (what the refusal asked for)" : " (the whole filler)")
                      << " the store did not open: " << r2.Describe() << " " << rep2.open_code
                      << " " << rep2.open_message << "\n"
                      << r2.ErrTail();
      } else {
        const std::string bad = CheckAcked(rep2, acked);
        if (!bad.empty()) {
          ++t.acked_not_exact;
          ADD_FAILURE() << tag << "after freeing space, acknowledged snapshots did not read "
                        << "back exactly:" << bad;
        }
      }
    }
    std::printf(
        "trial %d (%s): %zu acked, put failure [%s], writer %s, full-disk reopen %s\n", trial,
        profile.c_str(), acked.size(), failed_put.value_or("none").substr(0, 160).c_str(),
        w.Describe().c_str(),
        rep1.opened
            ? "opened"
            : (std::to_string(rep1.open_code) + " " + rep1.open_message.substr(0, 200)).c_str());
  }
  std::printf(
      "TRUST full-disk: trials=%d acked=%llu close_crashed=%d odd_put_failures=%d "
      "full_reopen_ok=%d full_reopen_refused_with_N=%d full_reopen_refused_other=%d "
      "dir_changed=%d final_open_failed=%d acked_not_exact=%d\n",
      t.trials, (unsigned long long)t.acked, t.close_crashed, t.put_failed_oddly, t.reopen_full_ok,
      t.reopen_full_refused_with_n, t.reopen_full_refused_other, t.dir_changed, t.final_open_failed,
      t.acked_not_exact);
}

}  // namespace
}  // namespace auxstore::trust
