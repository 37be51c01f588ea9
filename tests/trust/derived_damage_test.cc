// Issue 20, breaks 2 and 3: one damaged block in the SST of each column
// family in turn (runs, refs, pages, records, manifests) on a store of
// chained snapshots. Run records, refs and page entries are derived
// metadata: their damage is a store problem repair fixes, never a reason to
// call an intact snapshot corrupt, never a block `compact` cannot get past.
//
// The reference store (48 battery snapshots, the odd seeds chained turns
// sharing pages) is written in-process and closed cleanly. Each case, on a
// copy: one byte flipped in the middle of the data blocks of the largest
// SST of one column family (the family and the data-block size read from
// the SST's own properties); a read-only child (C ABI) reads every snapshot;
// then the real `auxstore` binary runs verify, verify --repair, verify,
// the child reads again, `compact --drop-ns` erases everything, and verify
// runs once more. Required: verify names corrupt only snapshots whose read
// failed; after repair verify exits 0 and every snapshot repair did not
// remove reads back exact (and only one that failed its read may be gone);
// after erasing everything, compact exits 0 and the store is back to an
// empty store's size.
#include <gtest/gtest.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table_properties.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "auxstore/store.h"
#include "tests/trust/trust_spec.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

constexpr uint64_t kSnapshots = 48;

std::string AllSeeds() { return "1-" + std::to_string(kSnapshots); }

struct Reference {
  std::string dir;
  std::string ns_hex;
  uint64_t empty_bytes = 0;  // an empty store after `compact`
};

uint64_t DirBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& [path, e] : List(dir)) n += e.type == 'f' ? e.size : 0;
  return n;
}

// The largest SST of column family `cf` and the bytes its data blocks take
// (they come first in a block-based table).
bool FindSst(const std::string& dir, const std::string& cf, std::string* file,
             uint64_t* data_bytes) {
  uint64_t best = 0;
  for (const auto& name : FilesOfType(dir, "SST")) {
    rocksdb::Options o;
    rocksdb::SstFileReader reader(o);
    if (!reader.Open(dir + "/" + name).ok()) continue;
    auto props = reader.GetTableProperties();
    if (!props || props->column_family_name != cf) continue;
    if (FileSize(dir + "/" + name) > best) {
      best = FileSize(dir + "/" + name);
      *file = dir + "/" + name;
      *data_bytes = props->data_size;
    }
  }
  return best > 0;
}

void FlipByte(const std::string& file, uint64_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(c);
}

ReadReport ReadAll(const std::string& dir) {
  ProcResult r = RunProcess({ChildPath(), "read", "--ro", "--no-create", "--store", dir,
                             "--profile", "battery", "--seeds", AllSeeds()});
  EXPECT_TRUE(r.Exited(0)) << "reader child " << r.Describe() << ": " << r.ErrTail(600);
  return ParseRead(r);
}

std::set<std::string> Prefixes(const nlohmann::json& arr) {
  std::set<std::string> out;
  if (!arr.is_array()) return out;
  for (const auto& c : arr) out.insert(c.value("prefix", ""));
  return out;
}

nlohmann::json Json(const ProcResult& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out.substr(0, 400) << r.ErrTail(400);
  return j;
}

const Reference& Ref() {
  static Reference* ref = [] {
    auto* r = new Reference;
    static ScratchDir root("derived-damage-ref");
    r->dir = root.Sub("store");
    {
      Options o;
      o.background_maintenance = false;
      auto s = Store::Open(o, r->dir);
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      auto ns = (*s)->RegisterNamespace(BatterySpec());
      EXPECT_TRUE(ns.ok());
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016" PRIx64, static_cast<uint64_t>(*ns));
      r->ns_hex = hex;
      for (uint64_t seed = 1; seed <= kSnapshots; ++seed) {
        const SnapshotSpec spec = *MakeProfile("battery", seed);
        Status p =
            (*s)->PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options());
        EXPECT_TRUE(p.ok()) << p.ToString();
      }
    }  // a clean close: everything in SSTs
    const std::string empty = root.Sub("empty");
    {
      Options o;
      o.background_maintenance = false;
      auto s = Store::Open(o, empty);
      EXPECT_TRUE(s.ok());
      EXPECT_TRUE((*s)->RegisterNamespace(BatterySpec()).ok());
    }
    EXPECT_TRUE(RunCli({"compact", empty}).Exited(0));
    r->empty_bytes = DirBytes(empty);
    return r;
  }();
  return *ref;
}

// Trial `trial` of `trials` flips the byte at (trial + 1) / (trials + 1) of
// the data blocks: one trial (the default) hits the middle.
void DamageAndRepair(const std::string& cf, int trial, int trials) {
  const Reference& ref = Ref();
  ScratchDir root("derived-damage");
  const std::string dir = root.Sub("store");
  std::string why;
  ASSERT_TRUE(CopyTree(ref.dir, dir, &why)) << why;
  std::string sst;
  uint64_t data_bytes = 0;
  ASSERT_TRUE(FindSst(dir, cf, &sst, &data_bytes)) << "no SST of " << cf;
  ASSERT_GT(data_bytes, 0u);
  const uint64_t at = data_bytes * static_cast<uint64_t>(trial + 1) / (trials + 1);
  FlipByte(sst, at);
  std::printf("%s: flipped byte %llu of %s (%llu bytes of data blocks)\n", cf.c_str(),
              (unsigned long long)at, sst.c_str(), (unsigned long long)data_bytes);

  const ReadReport before = ReadAll(dir);
  ASSERT_TRUE(before.opened) << before.open_message;
  std::set<std::string> failed_before;  // prefixes whose own bytes are damaged
  for (uint64_t seed = 1; seed <= kSnapshots; ++seed) {
    auto v = before.seeds.find(seed);
    ASSERT_NE(v, before.seeds.end()) << "seed " << seed << " not read";
    ASSERT_NE(v->second.verdict, "WRONG") << "seed " << seed << ": " << v->second.detail;
    if (v->second.verdict != "exact") failed_before.insert(testing::PrefixFromSeed(seed).ToHex());
  }

  ProcResult v1 = RunCli({"verify", "--json", dir});
  EXPECT_TRUE(v1.Exited(1)) << "verify of a damaged store: " << v1.Describe() << v1.ErrTail();
  for (const auto& p : Prefixes(Json(v1)["corrupt"])) {
    EXPECT_TRUE(failed_before.count(p)) << "verify called the intact snapshot " << p << " corrupt";
  }

  // Before the repair, compact refuses, changes nothing and says what to run.
  ProcResult c0 = RunCli({"compact", dir});
  EXPECT_TRUE(c0.Exited(2)) << "compact of a damaged store: " << c0.Describe();
  EXPECT_NE(c0.err.find("verify --repair"), std::string::npos) << c0.ErrTail();

  ProcResult rep = RunCli({"verify", "--repair", "--json", dir});
  EXPECT_TRUE(rep.Exited(0) || rep.Exited(1)) << "repair " << rep.Describe() << rep.ErrTail();
  const nlohmann::json rj = Json(rep);
  for (const auto& p : Prefixes(rj["repair"]["removed"])) {
    EXPECT_TRUE(failed_before.count(p)) << "repair removed the intact snapshot " << p;
  }
  std::printf("%s: %zu snapshots failed their read; repair removed %zu; not repaired: %s\n",
              cf.c_str(), failed_before.size(), Prefixes(rj["repair"]["removed"]).size(),
              rj["repair"]["not_repaired"].dump().c_str());

  ProcResult v2 = RunCli({"verify", dir});
  EXPECT_TRUE(v2.Exited(0)) << "verify after repair: " << v2.Describe() << "\n" << v2.out;

  const ReadReport after = ReadAll(dir);
  ASSERT_TRUE(after.opened) << after.open_message;
  for (uint64_t seed = 1; seed <= kSnapshots; ++seed) {
    const std::string p = testing::PrefixFromSeed(seed).ToHex();
    auto v = after.seeds.find(seed);
    ASSERT_NE(v, after.seeds.end());
    if (failed_before.count(p)) {
      EXPECT_TRUE(v->second.verdict == "absent" || v->second.verdict == "exact")
          << "seed " << seed << ": " << v->second.verdict << " " << v->second.detail;
    } else {
      EXPECT_EQ(v->second.verdict, "exact")
          << "seed " << seed << " (intact before the repair): " << v->second.detail;
    }
  }

  const uint64_t full = DirBytes(dir);
  ProcResult c = RunCli({"compact", "--json", "--drop-ns", ref.ns_hex, dir});
  ASSERT_TRUE(c.Exited(0)) << "compact after repair: " << c.Describe() << c.ErrTail();
  const uint64_t left = DirBytes(dir);
  std::printf("%s: %llu bytes before erasing everything, %llu after compact (empty store: %llu)\n",
              cf.c_str(), (unsigned long long)full, (unsigned long long)left,
              (unsigned long long)ref.empty_bytes);
  EXPECT_LE(left, ref.empty_bytes + (1u << 20)) << "compact left the erased bytes on disk";
  ProcResult v3 = RunCli({"verify", dir});
  EXPECT_TRUE(v3.Exited(0)) << "verify after compact: " << v3.Describe() << "\n" << v3.out;
}

// --cycles N: N positions in each family's data blocks.
void EachTrial(const std::string& cf) {
  const int trials = Cycles(1);
  for (int i = 0; i < trials && !::testing::Test::HasFatalFailure(); ++i) {
    DamageAndRepair(cf, i, trials);
  }
}

TEST(TrustDerivedDamage, RunsBlock) { EachTrial("auxstore.runs"); }
TEST(TrustDerivedDamage, RefsBlock) { EachTrial("auxstore.refs"); }
TEST(TrustDerivedDamage, PagesBlock) { EachTrial("auxstore.pages"); }
TEST(TrustDerivedDamage, RecordsBlock) { EachTrial("auxstore.records"); }
TEST(TrustDerivedDamage, ManifestsBlock) { EachTrial("auxstore.manifests"); }

}  // namespace
}  // namespace auxstore::trust
