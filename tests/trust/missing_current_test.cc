// Trust finding 5: a missing (or empty) CURRENT, or an empty MANIFEST, never
// destroys the store. A cleanly closed store holds 24 SST-ingested snapshots
// (C++ API, 16 KiB ingest threshold). Then, on a copy:
//   a. CURRENT deleted (and the empty WAL a clean close leaves);
//   b. CURRENT emptied;
//   c. the MANIFEST file CURRENT names emptied.
// auxstore_open for writing (in a child, C ABI) must fail with a message
// naming "CURRENT" (a, b) or "MANIFEST" (c), and afterwards every file that
// was there is still there with the same size and no new file exists (RocksDB
// would otherwise create a new, empty database over it and delete every SST
// it does not know). `auxstore verify` on each must exit 1 or 2 with such a
// message, never crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <string>

#include "auxstore/store.h"
#include "tests/trust/trust_spec.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

constexpr uint64_t kSnapshots = 24;

struct Case {
  const char* name;
  const char* word;  // the message must contain it
};

// Applies the damage to `dir`; returns what was removed (not to be compared).
std::set<std::string> Damage(const std::string& c, const std::string& dir) {
  std::set<std::string> removed;
  if (c == "CURRENT deleted") {
    ::unlink((dir + "/CURRENT").c_str());
    removed.insert("CURRENT");
    for (const auto& w : FilesOfType(dir, "WAL")) {
      if (FileSize(dir + "/" + w) == 0) {
        ::unlink((dir + "/" + w).c_str());
        removed.insert(w);
      }
    }
  } else if (c == "CURRENT emptied") {
    (void)!::truncate((dir + "/CURRENT").c_str(), 0);
  } else if (c == "MANIFEST emptied") {
    std::string current;
    ReadFile(dir + "/CURRENT", &current);
    while (!current.empty() && (current.back() == '\n' || current.back() == '\r')) {
      current.pop_back();
    }
    (void)!::truncate((dir + "/" + current).c_str(), 0);
  }
  return removed;
}

TEST(TrustMissingCurrent, OpenRefusesAndDestroysNothing) {
  ScratchDir root("missing-current");
  const std::string ref = root.Sub("reference");
  {
    Options o;
    o.chunk_bytes = 16 << 10;
    o.ingest_threshold_bytes = 16 << 10;
    o.background_maintenance = false;
    auto s = Store::Open(o, ref);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto ns = (*s)->RegisterNamespace(BatterySpec());
    ASSERT_TRUE(ns.ok());
    for (uint64_t seed = 1; seed <= kSnapshots; ++seed) {
      const SnapshotSpec spec = *MakeProfile("ingest20k", seed);
      ASSERT_TRUE(
          (*s)->PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options())
              .ok());
    }
  }
  const size_t ssts = FilesOfType(ref, "SST").size();
  ASSERT_GE(ssts, kSnapshots) << "expected one SST per ingested snapshot";
  std::printf("reference: %zu SST files\n%s", ssts, ListingToString(List(ref)).c_str());

  const Case cases[] = {{"CURRENT deleted", "CURRENT"},
                        {"CURRENT emptied", "CURRENT"},
                        {"MANIFEST emptied", "MANIFEST"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir = root.Sub(std::string("open-") + std::to_string(&c - cases));
    std::string why;
    ASSERT_TRUE(CopyTree(ref, dir, &why)) << why;
    const std::set<std::string> removed = Damage(c.name, dir);
    const Listing before = List(dir);
    ProcResult r = RunProcess({ChildPath(), "open", "--store", dir});
    const Listing after = List(dir);
    const ReadReport rep = ParseRead(r);
    EXPECT_TRUE(r.Exited(0)) << c.name << ": the opening child " << r.Describe() << "\n"
                             << r.ErrTail();
    if (rep.opened) {
      ADD_FAILURE() << c.name << ": auxstore_open for writing SUCCEEDED on a store whose " << c.word
                    << " is damaged (want a failure naming " << c.word << ")";
    } else {
      EXPECT_NE(rep.open_message.find(c.word), std::string::npos)
          << c.name << ": auxstore_open failed with " << rep.open_code << " (" << rep.open_message
          << "), a message not naming " << c.word;
    }
    const std::string diff = DiffListings(before, after, /*compare_modes=*/false);
    size_t ssts_after = FilesOfType(dir, "SST").size();
    EXPECT_TRUE(diff.empty()) << c.name << ": the open attempt changed the store directory ("
                              << ssts << " SST files before, " << ssts_after << " after):\n"
                              << diff;
    (void)removed;

    const std::string vdir = root.Sub(std::string("verify-") + std::to_string(&c - cases));
    ASSERT_TRUE(CopyTree(ref, vdir, &why)) << why;
    Damage(c.name, vdir);
    ProcResult v = RunCli({"verify", vdir});
    const std::string text = v.out + v.err;
    EXPECT_TRUE((v.Exited(1) || v.Exited(2)) && text.find(c.word) != std::string::npos)
        << c.name << ": `auxstore verify` " << v.Describe() << " (want exit 1 or 2 with a "
        << "message naming " << c.word << "):\n"
        << text.substr(0, 2000);
    std::printf(
        "%s: open -> %s; verify -> %s: %s\n", c.name,
        rep.opened
            ? "OPENED"
            : (std::to_string(rep.open_code) + " " + rep.open_message).substr(0, 300).c_str(),
        v.Describe().c_str(), text.substr(0, 300).c_str());
  }
}

}  // namespace
}  // namespace auxstore::trust
