// Trust finding 7: an interrupted put, re-put, is clean. A child
// (auxstore_trust_kill_child) writes a big snapshot (over the 1 MiB ingest
// threshold: SST ingest, then the manifest commit) and dies of a real
// SIGKILL exactly after the ingest and before the commit (its file system
// raises SIGKILL on the first WAL append after an SST was linked into the
// store directory). Then a new process (auxstore_trust_child, C ABI) puts the
// SAME prefix with DIFFERENT content (other layers, other sizes; ingested or
// through the WAL; by the C ABI, by the C++ API without background
// maintenance, and by `auxstore import`). Required: the new snapshot reads
// back exactly; `auxstore verify` exits 0; `auxstore verify --repair` removes
// nothing; `auxstore compact` leaves no orphan records (verify --json:
// orphan counts 0) and the snapshot still reads back exactly.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/test_util.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

constexpr uint64_t kSeed = 500;

// Reads the pre-seeds (small) and the re-put seed (profile `reput`).
void ExpectExact(const std::string& store, const std::string& reput, const std::string& when) {
  ProcResult r = RunProcess({ChildPath(), "read", "--store", store, "--profile", reput, "--seeds",
                             std::to_string(kSeed)});
  ASSERT_TRUE(r.Exited(0)) << when << ": reader child " << r.Describe() << "\n" << r.ErrTail();
  ReadReport rep = ParseRead(r);
  ASSERT_TRUE(rep.opened) << when << ": open failed: " << rep.open_code << " " << rep.open_message;
  const ReadVerdict& v = rep.seeds[kSeed];
  EXPECT_EQ(v.verdict, "exact") << when << ": the re-put snapshot (seed " << kSeed << ", " << reput
                                << "): " << v.verdict << " " << v.detail;
  ProcResult p =
      RunProcess({ChildPath(), "read", "--store", store, "--profile", "small", "--seeds", "1-3"});
  ReadReport prep = ParseRead(p);
  for (uint64_t s = 1; s <= 3; ++s) {
    EXPECT_EQ(prep.seeds[s].verdict, "exact")
        << when << ": earlier snapshot seed " << s << ": " << prep.seeds[s].verdict << " "
        << prep.seeds[s].detail;
  }
}

enum class Via { kCAbi, kCxxNoMaintenance, kImport };

void InterruptedThenReput(const std::string& reput, Via via) {
  ScratchDir dir("interrupted-put");
  const std::string store = dir.Sub("store");
  // 1. killed between ingest and manifest commit
  ProcResult k = RunProcess({KillChildPath(), "--store", store, "--seed", std::to_string(kSeed),
                             "--profile", "bigA", "--pre-seeds", "1,2,3"});
  ASSERT_TRUE(k.signal == SIGKILL && k.FirstLineWith("ARMED"))
      << "the kill child should have died of SIGKILL after the ingest: " << k.Describe() << "\n"
      << k.out << k.ErrTail();
  // 2. a new process puts the same prefix with other content
  if (via == Via::kImport) {
    // `auxstore import` of an export of that content made in another store
    const std::string side = dir.Sub("side"), exp = dir.Sub("export");
    ProcResult w = RunProcess({ChildPath(), "put", "--store", side, "--profile", reput, "--seeds",
                               std::to_string(kSeed)});
    ASSERT_TRUE(w.FirstLineWith("A " + std::to_string(kSeed))) << w.out << w.ErrTail();
    ProcResult e = RunCli({"export", side, testing::PrefixFromSeed(kSeed).ToHex(), exp});
    ASSERT_TRUE(e.Exited(0)) << "export: " << e.Describe() << " " << e.ErrTail();
    ProcResult i = RunCli({"import", store, exp});
    ASSERT_TRUE(i.Exited(0)) << "`auxstore import` of the re-put: " << i.Describe() << " " << i.out
                             << i.ErrTail();
  } else {
    std::vector<std::string> argv =
        via == Via::kCAbi
            ? std::vector<std::string>{ChildPath(), "put", "--store", store,
                                       "--profile", reput, "--seeds", std::to_string(kSeed)}
            : std::vector<std::string>{
                  KillChildPath(),       "--reput",   "1",  "--store", store, "--seed",
                  std::to_string(kSeed), "--profile", reput};
    ProcResult w = RunProcess(argv);
    ASSERT_TRUE(w.Exited(0)) << "re-put child " << w.Describe() << "\n" << w.ErrTail();
    ASSERT_TRUE(w.FirstLineWith("A " + std::to_string(kSeed)))
        << "the re-put of seed " << kSeed << " (" << reput << ") was not acknowledged: " << w.out;
  }
  ExpectExact(store, reput, "after the re-put");

  // 3. verify, repair, compact
  ProcResult v = RunCli({"verify", store});
  EXPECT_TRUE(v.Exited(0)) << "`auxstore verify` after the re-put: " << v.Describe() << "\n"
                           << v.out << v.ErrTail();
  ProcResult rp = RunCli({"verify", "--repair", store, "--json"});
  const auto rj = nlohmann::json::parse(rp.out, nullptr, false);
  ASSERT_FALSE(rj.is_discarded()) << "verify --repair --json: " << rp.Describe() << " " << rp.out
                                  << rp.ErrTail();
  EXPECT_TRUE(rp.Exited(0)) << "`auxstore verify --repair`: " << rp.Describe() << " " << rp.out;
  ASSERT_TRUE(rj.contains("repair") && rj["repair"].contains("removed"))
      << "`auxstore verify --repair --json` did not say what it removed: " << rp.out;
  EXPECT_TRUE(rj["repair"]["removed"].empty())
      << "`auxstore verify --repair` removed snapshots: " << rj["repair"]["removed"].dump();
  ExpectExact(store, reput, "after verify --repair");
  ProcResult c = RunCli({"compact", store});
  EXPECT_TRUE(c.Exited(0)) << "`auxstore compact`: " << c.Describe() << "\n" << c.ErrTail();
  ProcResult v2 = RunCli({"verify", store, "--json"});
  const auto vj = nlohmann::json::parse(v2.out, nullptr, false);
  ASSERT_FALSE(vj.is_discarded()) << v2.Describe() << " " << v2.out << v2.ErrTail();
  EXPECT_TRUE(v2.Exited(0) && vj.value("orphan_puts", -1) == 0 &&
              vj.value("orphan_records", -1) == 0)
      << "after `auxstore compact`: verify " << v2.Describe() << ", orphan_puts "
      << vj.value("orphan_puts", -1) << ", orphan_records " << vj.value("orphan_records", -1)
      << ", corrupt " << vj["corrupt"].dump();
  ExpectExact(store, reput, "after compact");
  std::printf(
      "TRUST interrupted-put (%s via %s): verify exit %d, repair removed %s, after compact "
      "orphan_puts=%d orphan_records=%d\n",
      reput.c_str(),
      via == Via::kCAbi     ? "C ABI"
      : via == Via::kImport ? "import"
                            : "C++ no maintenance",
      v.exit_code, rj["repair"]["removed"].dump().c_str(), vj.value("orphan_puts", -1),
      vj.value("orphan_records", -1));
}

// The C ABI handle runs background maintenance, whose first intent sweep
// races the re-put (and usually wins, hiding the orphan); the C++ API with
// background_maintenance off and `auxstore import` have no such sweep.
// Each case: the profile re-put ("bigB" is ingested as an SST, "smallB" goes
// through the WAL) and the way it is re-put.
struct ReputCase {
  const char* profile;
  Via via;
  const char* name;
};

class TrustInterruptedPut : public ::testing::TestWithParam<ReputCase> {};

TEST_P(TrustInterruptedPut, ReputIsClean) {
  InterruptedThenReput(GetParam().profile, GetParam().via);
}

INSTANTIATE_TEST_SUITE_P(
    Reputs, TrustInterruptedPut,
    ::testing::Values(ReputCase{"bigB", Via::kCAbi, "IngestedThroughCAbi"},
                      ReputCase{"smallB", Via::kCAbi, "ThroughTheWalThroughCAbi"},
                      ReputCase{"bigB", Via::kCxxNoMaintenance, "IngestedThroughCxxApi"},
                      ReputCase{"smallB", Via::kCxxNoMaintenance, "ThroughTheWalThroughCxxApi"},
                      ReputCase{"bigB", Via::kImport, "ByAuxstoreImport"}),
    [](const ::testing::TestParamInfo<ReputCase>& p) { return p.param.name; });

}  // namespace
}  // namespace auxstore::trust
