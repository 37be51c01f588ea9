// Trust finding 4: a damaged page never crashes a reader. A small store is
// built with the C++ API (32 KiB ingest threshold, 16 KiB chunks, so files
// stay small): 3 snapshots SST-ingested, 24 small ones flushed from the WAL
// into a shared records SST by a clean close, then 6 more small ones written
// with kSync after a reopen and copied *while the store is open* (after
// Flush), so the reference has a live WAL with records in it (as
// tests/reliability/corruption_trial_test does).
//
// For every file of each type (SST, MANIFEST, WAL, OPTIONS, CURRENT,
// WATERMARK) and EVERY 4 KiB page of it: copy the reference, zero that page,
// and in a child process (auxstore_trust_child, C ABI) open it read-only,
// then read-write, and read every snapshot (get_manifest + get_layer of every
// layer) plus one restore through a pipeline on the host backend (seed 1:
// opaque, QSA and DSA layers). Allowed: open refused with a message; reads
// return an error; reads return exactly the right bytes. A child killed by a
// signal fails the test (file, page, mode, signal, its stderr); so does a
// read returning OK with the wrong bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "auxstore/store.h"
#include "tests/support/damage_outcome.h"
#include "tests/trust/trust_spec.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

constexpr uint64_t kSeeds = 33;  // 1-3 ingested, 4-27 flushed, 28-33 in the live WAL

Options BuildOptions() {
  Options o;
  o.chunk_bytes = 16 << 10;
  o.ingest_threshold_bytes = 32 << 10;
  o.background_maintenance = false;
  return o;
}

void Put(Store& s, uint64_t from, uint64_t to) {
  auto ns = s.RegisterNamespace(BatterySpec());
  ASSERT_TRUE(ns.ok()) << ns.status().ToString();
  for (uint64_t seed = from; seed <= to; ++seed) {
    const SnapshotSpec spec = *MakeProfile("pages", seed);
    Status st = s.PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options());
    ASSERT_TRUE(st.ok()) << "seed " << seed << ": " << st.ToString();
  }
}

struct Row {
  int tried = 0, refused = 0, detected = 0, intact = 0, crashed = 0, wrong = 0, lost = 0;
};

// Classifies one child run; *detail gets what to print for a failure.
std::string Classify(const ProcResult& r, std::string* detail) {
  if (r.hung || r.signal != 0 || !r.Exited(0)) {
    std::string assertion;
    const size_t a = r.err.rfind("Assertion");
    if (a != std::string::npos) {
      const size_t start = r.err.rfind('\n', a);
      assertion = r.err.substr(start == std::string::npos ? 0 : start + 1,
                               r.err.find('\n', a) - (start == std::string::npos ? 0 : start + 1));
    }
    *detail = r.Describe() + (assertion.empty() ? "\n" + r.ErrTail(800) : ": " + assertion);
    return "crashed";
  }
  const ReadReport rep = ParseRead(r);
  testing::DamageReads reads;
  reads.opened = rep.opened;
  reads.refusal_has_message = !rep.open_message.empty();
  if (!rep.opened) {
    *detail = reads.refusal_has_message ? rep.open_message : "refused without a message";
    return testing::DamageOutcomeName(testing::ClassifyDamage(reads));
  }
  if (rep.seeds.size() != kSeeds || !rep.closed || !rep.quarantines_first) {
    *detail = "the child did not finish its reads";
    return "crashed";
  }
  auto count = [&](const ReadVerdict& v, const std::string& what) {
    if (v.verdict == "exact") {
      ++reads.exact;
    } else if (v.verdict == "absent") {
      ++reads.absent;
      detail->append(what + " absent: " + v.detail + "; ");
    } else if (v.verdict == "WRONG") {
      ++reads.wrong;
      detail->append(what + ": " + v.detail + "; ");
    } else {
      ++reads.reported;
    }
  };
  for (const auto& [seed, v] : rep.seeds) count(v, "seed " + std::to_string(seed));
  if (rep.restore) count(*rep.restore, "restore of seed 1");
  reads.quarantined = *rep.quarantines_last - *rep.quarantines_first;
  return testing::DamageOutcomeName(testing::ClassifyDamage(reads));
}

TEST(TrustDamagedPages, EveryZeroedPageIsRefusedDetectedOrIntactNeverACrash) {
  ScratchDir root("damaged-pages");
  const std::string build = root.Sub("build"), ref = root.Sub("reference");
  {
    auto s = Store::Open(BuildOptions(), build);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Put(**s, 1, 27);
  }  // clean close: the small ones are flushed into a records SST
  {
    auto s = Store::Open(BuildOptions(), build);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Put(**s, 28, kSeeds);
    ASSERT_TRUE((*s)->Flush().ok());
    std::string why;
    ASSERT_TRUE(CopyTree(build, ref, &why)) << why;  // while open: a live WAL with records
  }
  const std::string seeds = "1-" + std::to_string(kSeeds);
  auto child = [&](const std::string& dir, bool ro) {
    std::vector<std::string> argv{ChildPath(), "read",    "--store", dir,         "--profile",
                                  "pages",     "--seeds", seeds,     "--restore", "1"};
    if (ro) argv.push_back("--ro");
    return RunProcess(argv);
  };
  {  // undamaged, a copy reads back whole both ways
    const std::string copy = root.Sub("undamaged");
    std::string why;
    ASSERT_TRUE(CopyTree(ref, copy, &why)) << why;
    for (bool ro : {true, false}) {
      std::string detail;
      const std::string o = Classify(child(copy, ro), &detail);
      ASSERT_EQ(o, "intact") << (ro ? "read-only" : "read-write") << " " << detail;
    }
  }

  const std::vector<std::string> types = {"SST",     "MANIFEST", "WAL",
                                          "OPTIONS", "CURRENT",  "WATERMARK"};
  std::map<std::string, std::vector<std::string>> files;
  for (const auto& t : types) {
    files[t] = FilesOfType(ref, t);
    for (const auto& f : files[t]) {
      const uint64_t size = FileSize(ref + "/" + f);
      std::printf("reference %-22s %-9s %8llu bytes, %llu pages\n", f.c_str(), t.c_str(),
                  (unsigned long long)size, (unsigned long long)((size + 4095) / 4096));
    }
    ASSERT_FALSE(files[t].empty()) << "the reference store has no " << t << " file";
  }

  struct Job {
    std::string type, file;
    uint64_t size, page, pages;
  };
  std::vector<Job> jobs;
  for (const auto& t : types) {
    for (const auto& f : files[t]) {
      const uint64_t size = FileSize(ref + "/" + f);
      const uint64_t pages = (size + 4095) / 4096;
      for (uint64_t page = 0; page < pages; ++page) jobs.push_back({t, f, size, page, pages});
    }
  }
  std::map<std::string, Row> table;    // "<type> <ro|rw>"
  std::map<std::string, Row> by_file;  // "<file> <ro|rw>"
  std::vector<std::string> failures;
  std::mutex mu;
  size_t next = 0;
  // Three workers, each on its own copy: the children mostly wait on I/O.
  auto worker = [&](int w) {
    const std::string trial = root.Sub("trial-" + std::to_string(w));
    for (;;) {
      Job j;
      {
        std::lock_guard lock(mu);
        if (next == jobs.size()) return;
        j = jobs[next++];
      }
      RemoveTree(trial);
      std::string why;
      if (!CopyTree(ref, trial, &why)) {
        std::lock_guard lock(mu);
        failures.push_back(why);
        return;
      }
      {
        std::fstream io(trial + "/" + j.file, std::ios::in | std::ios::out | std::ios::binary);
        const std::string zeros(std::min<uint64_t>(4096, j.size - j.page * 4096), '\0');
        io.seekp(static_cast<std::streamoff>(j.page * 4096));
        io.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
      }
      for (bool ro : {true, false}) {  // read-only first: it changes nothing
        std::string detail;
        const std::string o = Classify(child(trial, ro), &detail);
        std::lock_guard lock(mu);
        for (Row* row :
             {&table[j.type + (ro ? " ro" : " rw")], &by_file[j.file + (ro ? " ro" : " rw")]}) {
          ++row->tried;
          if (o == "refused") ++row->refused;
          if (o == "detected") ++row->detected;
          if (o == "intact") ++row->intact;
          if (o == "crashed") ++row->crashed;
          if (o == "WRONG-BYTES") ++row->wrong;
          if (o == "SILENT-LOSS") ++row->lost;
        }
        if (o == "crashed" || o == "WRONG-BYTES" || o == "SILENT-LOSS") {
          failures.push_back(j.file + " (" + j.type + ") page " + std::to_string(j.page) + " of " +
                             std::to_string(j.pages) + " zeroed, " +
                             (ro ? "read-only" : "read-write") + " open: " + o + ": " + detail);
        }
      }
    }
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w) workers.emplace_back(worker, w);
  for (auto& t : workers) t.join();
  std::sort(failures.begin(), failures.end());
  std::printf("TRUST damaged-pages: every 4 KiB page zeroed, one child per page and mode\n");
  std::printf("%-14s %7s %8s %9s %7s %8s %6s %6s\n", "file", "tried", "refused", "detected",
              "intact", "CRASHED", "WRONG", "LOST");
  Row total;
  for (const auto& [k, r] : table) {
    std::printf("%-14s %7d %8d %9d %7d %8d %6d %6d\n", k.c_str(), r.tried, r.refused, r.detected,
                r.intact, r.crashed, r.wrong, r.lost);
    total.crashed += r.crashed;
    total.wrong += r.wrong;
    total.lost += r.lost;
    total.tried += r.tried;
  }
  std::printf("%-22s %7s %8s %9s %7s %8s %6s %6s\n", "per file", "tried", "refused", "detected",
              "intact", "CRASHED", "WRONG", "LOST");
  for (const auto& [k, r] : by_file) {
    std::printf("%-22s %7d %8d %9d %7d %8d %6d %6d\n", k.c_str(), r.tried, r.refused, r.detected,
                r.intact, r.crashed, r.wrong, r.lost);
  }
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(total.crashed, 0) << total.crashed << " of " << total.tried
                              << " child runs died (see above)";
  EXPECT_EQ(total.wrong, 0);
  EXPECT_EQ(total.lost, 0) << "snapshots gone that the store neither reported nor quarantined";
}

}  // namespace
}  // namespace auxstore::trust
