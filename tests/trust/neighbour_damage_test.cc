// A damaged block in one records table file never costs a snapshot whose
// records are all in another file.
//
// RocksDB reads every level-0 file on a Seek (and on a point lookup while
// level 0 holds three files or fewer), so a damaged first block in the file
// whose keys sort just after a healthy snapshot's used to fail that
// snapshot's read with Corruption: a read-write reader quarantined it,
// verify called it corrupt, and repair, whose rewrite read the family
// through the same merged iterator, lost it. Found by the issue 20 review.
//
// Two small snapshots (the WAL path), each flushed into a level-0 records
// file of its own by a clean close; one byte flipped in the first data
// block of the file that sorts after the other. Then from outside: a
// read-write child (C ABI) reads both, `auxstore verify`, `verify
// --repair`, `verify`, and the child reads again.
#include <gtest/gtest.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table_properties.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "auxstore/store.h"
#include "tests/trust/trust_spec.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

struct RecordsFile {
  std::string path;
  uint64_t number = 0;  // RocksDB's file number: the order the files were written
  std::string smallest_key;
  uint64_t data_bytes = 0;
};

std::vector<RecordsFile> RecordsFiles(const std::string& dir) {
  std::vector<RecordsFile> out;
  for (const auto& name : FilesOfType(dir, "SST")) {
    rocksdb::Options o;
    rocksdb::SstFileReader reader(o);
    if (!reader.Open(dir + "/" + name).ok()) continue;
    auto props = reader.GetTableProperties();
    if (!props || props->column_family_name != "auxstore.records") continue;
    std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    if (!it->Valid()) continue;
    out.push_back({dir + "/" + name, std::stoull(name), it->key().ToString(), props->data_size});
  }
  return out;
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

ReadReport ReadBoth(const std::string& dir) {
  // Read-write: a Corruption would quarantine the snapshot.
  ProcResult r = RunProcess(
      {ChildPath(), "read", "--no-create", "--store", dir, "--profile", "small", "--seeds", "1,2"});
  EXPECT_TRUE(r.Exited(0)) << "reader child " << r.Describe() << ": " << r.ErrTail(600);
  return ParseRead(r);
}

TEST(TrustNeighbourDamage, DamageInAnotherRecordsFileCostsNoHealthySnapshot) {
  ScratchDir root("neighbour-damage");
  const std::string dir = root.Sub("store");
  for (uint64_t seed : {1, 2}) {
    Options o;
    o.background_maintenance = false;
    auto s = Store::Open(o, dir);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto ns = (*s)->RegisterNamespace(BatterySpec());
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    const SnapshotSpec spec = *MakeProfile("small", seed);
    Status p =
        (*s)->PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options());
    ASSERT_TRUE(p.ok()) << p.ToString();
  }  // each clean close flushes the seed's records into a level-0 file of its own

  std::vector<RecordsFile> files = RecordsFiles(dir);
  ASSERT_EQ(files.size(), 2u) << "the setup needs one records file per snapshot";
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.number < b.number; });
  // files[i] holds seed i + 1. The one whose keys sort after the other's is
  // the neighbour a Seek for the other's keys reads first.
  const size_t damaged = files[0].smallest_key < files[1].smallest_key ? 1 : 0;
  const uint64_t healthy_seed = damaged == 0 ? 2 : 1, damaged_seed = damaged + 1;
  ASSERT_GT(files[damaged].data_bytes, 64u);
  FlipByte(files[damaged].path, 64);  // inside its first data block

  const ReadReport before = ReadBoth(dir);
  ASSERT_TRUE(before.opened) << before.open_message;
  ASSERT_TRUE(before.seeds.count(healthy_seed));
  const ReadVerdict& h = before.seeds.at(healthy_seed);
  // The healthy one reads back, or fails as a store problem (I/O), never as
  // damage of its own.
  EXPECT_TRUE(h.verdict == "exact" || (h.verdict == "error" && h.code != 2))
      << "healthy seed " << healthy_seed << ": " << h.verdict << " " << h.detail;
  EXPECT_NE(before.seeds.at(damaged_seed).verdict, "WRONG");

  ProcResult v1 = RunCli({"verify", "--json", dir});
  EXPECT_TRUE(v1.Exited(1)) << "verify of a damaged store: " << v1.Describe() << v1.ErrTail();
  auto j = nlohmann::json::parse(v1.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << v1.out.substr(0, 400);
  const std::string healthy_prefix = testing::PrefixFromSeed(healthy_seed).ToHex();
  for (const auto& c : j["corrupt"]) {
    EXPECT_NE(c.value("prefix", ""), healthy_prefix)
        << "verify called the healthy snapshot corrupt";
  }

  ProcResult rep = RunCli({"verify", "--repair", "--json", dir});
  EXPECT_TRUE(rep.Exited(0) || rep.Exited(1)) << "repair " << rep.Describe() << rep.ErrTail();
  auto rj = nlohmann::json::parse(rep.out, nullptr, false);
  ASSERT_FALSE(rj.is_discarded()) << rep.out.substr(0, 400);
  for (const auto& c : rj["repair"]["removed"]) {
    EXPECT_NE(c.value("prefix", ""), healthy_prefix) << "repair removed the healthy snapshot";
  }
  ProcResult v2 = RunCli({"verify", dir});
  EXPECT_TRUE(v2.Exited(0)) << "verify after repair: " << v2.Describe() << "\n" << v2.out;

  const ReadReport after = ReadBoth(dir);
  ASSERT_TRUE(after.opened) << after.open_message;
  EXPECT_EQ(after.seeds.at(healthy_seed).verdict, "exact") << after.seeds.at(healthy_seed).detail;
  const std::string& gone = after.seeds.at(damaged_seed).verdict;
  EXPECT_TRUE(gone == "absent" || gone == "exact") << gone;
}

}  // namespace
}  // namespace auxstore::trust
