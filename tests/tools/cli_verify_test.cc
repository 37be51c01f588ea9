// `auxstore verify` finds planted corruption, names each damaged snapshot,
// `--repair` removes exactly those, and every healthy snapshot survives.
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>

#include <fstream>
#include <set>

#include "auxstore/maintenance.h"
#include "store/keys.h"
#include "store/rocks/rocks_options.h"
#include "store/watermark.h"
#include "tests/tools/cli_test_util.h"

namespace auxstore::testing {
namespace {

using namespace store_internal;

// Raw RocksDB over a closed store, opened like the store opens it.
struct RawStore {
  explicit RawStore(const std::string& path) : setup(MakeRocksSetup()) {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(setup.db, path, setup.cfs, &cfs, &raw);
    EXPECT_TRUE(s.ok()) << s.ToString();
    db.reset(raw);
  }
  ~RawStore() {
    for (auto* h : cfs) (void)db->DestroyColumnFamilyHandle(h);
    (void)db->Close();
  }
  RocksSetup setup;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  std::unique_ptr<rocksdb::DB> db;
};

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenStore(path());
    ns_ = store->RegisterNamespace(TestSpec()).value();
    for (uint64_t i = 0; i < 6; ++i) healthy_.push_back(PutMixed(*store, ns_, 100 + i, i % 2));
    flipped_ = PutMixed(*store, ns_, 1, /*big=*/true);     // ingested: its own SST
    rewritten_ = PutMixed(*store, ns_, 2, /*big=*/false);  // through the WAL
    torn_ = PutMixed(*store, ns_, 3, /*big=*/false);
  }
  std::string path() const { return dir_.Sub("store"); }

  void FlipBytesInSstOf(const Written& w) {
    std::string file;
    {
      RawStore raw(path());
      std::vector<rocksdb::LiveFileMetaData> live;
      raw.db->GetLiveFilesMetaData(&live);
      const std::string skey = PutKey(ns_, w.put);
      for (const auto& f : live) {
        if (f.column_family_name == kRecordsCf && f.smallestkey.starts_with(skey)) {
          file = f.db_path + f.name;
        }
      }
    }
    ASSERT_FALSE(file.empty());
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const std::streamoff at = f.tellg() / 3;
    char b[4];
    f.seekg(at);
    f.read(b, 4);
    for (char& c : b) c = static_cast<char>(c ^ 0x5a);
    f.seekp(at);
    f.write(b, 4);
  }

  void RewriteRecordOf(const Written& w) {
    RawStore raw(path());
    const std::string key = RecordKey(ns_, w.put, 2, 0, 1);
    std::string v;
    ASSERT_TRUE(raw.db->Get(rocksdb::ReadOptions(), raw.cfs[kRecords], key, &v).ok());
    v[v.size() / 2] ^= 1;  // payload byte: the envelope checksum no longer matches
    ASSERT_TRUE(raw.db->Put(rocksdb::WriteOptions(), raw.cfs[kRecords], key, v).ok());
  }

  void DeleteRecordOf(const Written& w) {
    RawStore raw(path());
    ASSERT_TRUE(
        raw.db->Delete(rocksdb::WriteOptions(), raw.cfs[kRecords], RecordKey(ns_, w.put, 1, 0, 0))
            .ok());
  }

  std::set<std::string> CorruptPrefixes(const nlohmann::json& j) {
    std::set<std::string> s;
    for (const auto& c : j["corrupt"]) s.insert(c["prefix"].get<std::string>());
    return s;
  }

  TempDir dir_;
  NamespaceId ns_ = 0;
  std::vector<Written> healthy_;
  Written flipped_, rewritten_, torn_;
};

TEST_F(VerifyTest, CleanStoreExitsZeroWithCounts) {
  CliRun r = RunBinary({"verify", path(), "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.Json();
  EXPECT_TRUE(j["clean"].get<bool>());
  EXPECT_EQ(j["snapshots_checked"].get<uint64_t>(), 9u);
  EXPECT_EQ(j["snapshots_ok"].get<uint64_t>(), 9u);
  EXPECT_EQ(j["orphan_puts"].get<uint64_t>(), 0u);
  EXPECT_GT(j["bytes_checked"].get<uint64_t>(), 3u << 20);
  CliRun text = RunBinary({"verify", path()});
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("verify: clean"), std::string::npos) << text.out;
}

TEST_F(VerifyTest, FindsEachPlantedCorruptionAndRepairRemovesExactlyThose) {
  FlipBytesInSstOf(flipped_);
  RewriteRecordOf(rewritten_);
  DeleteRecordOf(torn_);
  const std::set<std::string> damaged = {flipped_.prefix.ToHex(), rewritten_.prefix.ToHex(),
                                         torn_.prefix.ToHex()};

  // In-process: the report names each snapshot, and why.
  auto report = VerifyStoreAt(path());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->corrupt.size(), 3u);
  EXPECT_EQ(report->snapshots_ok, 6u);
  for (const auto& c : report->corrupt) {
    EXPECT_TRUE(damaged.count(c.prefix.ToHex())) << c.prefix.ToHex() << ": " << c.why;
    if (c.prefix == rewritten_.prefix) {
      EXPECT_NE(c.why.find("checksum mismatch"), std::string::npos) << c.why;
      EXPECT_EQ(c.layer, std::optional<uint32_t>(2));
    }
    if (c.prefix == torn_.prefix) {
      EXPECT_NE(c.why.find("missing"), std::string::npos) << c.why;
      EXPECT_EQ(c.layer, std::optional<uint32_t>(1));
    }
  }

  // As a binary: exit 1 and the same three in --json.
  CliRun r = RunBinary({"verify", path(), "--json"});
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(CorruptPrefixes(r.Json()), damaged);
  EXPECT_FALSE(r.Json()["clean"].get<bool>());

  CliRun rep = RunBinary({"verify", path(), "--repair", "--json"});
  ASSERT_EQ(rep.code, 1) << rep.out << rep.err;
  const nlohmann::json repaired = rep.Json();
  std::set<std::string> removed;
  for (const auto& c : repaired["repair"]["removed"]) removed.insert(c["prefix"]);
  EXPECT_EQ(removed, damaged);
  EXPECT_TRUE(rep.Json()["repair"]["not_repaired"].empty()) << rep.out;

  CliRun again = RunBinary({"verify", path(), "--json"});
  EXPECT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(again.Json()["snapshots_checked"].get<uint64_t>(), 6u);
  EXPECT_EQ(again.Json()["orphan_puts"].get<uint64_t>(), 0u);

  auto store = OpenStore(path());
  for (const Written& w : healthy_) ExpectReadsBack(*store, w);
  for (const Written* w : {&flipped_, &rewritten_, &torn_}) {
    EXPECT_TRUE(store->GetManifest(ns_, w->prefix).error().IsNotFound());
  }
  EXPECT_EQ(store->Stats().quarantines, 3u);
}

TEST_F(VerifyTest, LostCommitsAreCorruptionAndOrphansAreNot) {
  {  // records with no manifest: an orphan, reported but not corruption
    RawStore raw(path());
    ASSERT_TRUE(raw.db
                    ->Delete(rocksdb::WriteOptions(), raw.cfs[kManifests],
                             SnapshotKey(ns_, healthy_[0].prefix))
                    .ok());
  }
  CliRun r = RunInProcess({"verify", path(), "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.Json()["orphan_puts"].get<uint64_t>(), 1u);
  // QSA: 1 chunk; DSA: one per array (3); opaque: 3 chunks at 64 KiB.
  EXPECT_EQ(r.Json()["orphan_records"].get<uint64_t>(), 1u + 3u + 3u);

  const uint64_t seq = VerifyStoreAt(path())->commit_seq;
  ASSERT_TRUE(WriteWatermark(path(), seq + 3).ok());  // as if a WAL tail vanished
  CliRun lost = RunInProcess({"verify", path(), "--json"});
  EXPECT_EQ(lost.code, 1) << lost.out;
  EXPECT_TRUE(lost.Json()["watermark_lost"].get<bool>());
  EXPECT_EQ(lost.Json()["lost_commits"].get<uint64_t>(), 3u);
  EXPECT_FALSE(lost.Json()["clean"].get<bool>());
  EXPECT_TRUE(lost.Json()["store_problems"].empty()) << lost.out;
  // Repair will not paper over lost commits unless told to.
  CliRun refuse = RunInProcess({"verify", path(), "--repair"});
  EXPECT_EQ(refuse.code, 2) << refuse.out;
  EXPECT_NE(refuse.err.find("--accept-data-loss"), std::string::npos) << refuse.err;
  CliRun accept = RunInProcess({"verify", path(), "--repair", "--accept-data-loss"});
  EXPECT_EQ(accept.code, 1) << accept.out << accept.err;
  EXPECT_EQ(RunInProcess({"verify", path()}).code, 0);
}

TEST(VerifyUsage, MissingStoreAndBadArgumentsExitTwo) {
  TempDir dir;
  CliRun r = RunBinary({"verify", dir.Sub("nope")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no auxstore store"), std::string::npos) << r.err;
  EXPECT_EQ(RunBinary({"verify"}).code, 2);
  EXPECT_EQ(RunBinary({"frobnicate", dir.path()}).code, 2);
  for (const char* cmd : {"verify", "compact", "stats", "ls", "inspect", "export", "import"}) {
    CliRun h = RunBinary({cmd, "--help"});
    EXPECT_EQ(h.code, 0) << cmd;
    EXPECT_NE(h.out.find("PATH"), std::string::npos) << cmd << ": " << h.out;
  }
}

}  // namespace
}  // namespace auxstore::testing
