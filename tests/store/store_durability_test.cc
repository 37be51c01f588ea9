// Store: format version, durable watermark, async durability and Flush.
#include <rocksdb/db.h>

#include <filesystem>
#include <fstream>

#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"
#include "store/rocks/rocks_options.h"
#include "store/store_dir.h"
#include "store/watermark.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::StoreFixture;
namespace si = store_internal;

// Opens the store's RocksDB directly, behind the store's back.
struct RawDb {
  explicit RawDb(const std::string& path) : setup(si::MakeRocksSetup()) {
    rocksdb::DB* raw = nullptr;
    auto s = rocksdb::DB::Open(setup.db, path, setup.cfs, &cfs, &raw);
    EXPECT_TRUE(s.ok()) << s.ToString();
    db.reset(raw);
  }
  ~RawDb() {
    for (auto* h : cfs) (void)db->DestroyColumnFamilyHandle(h);
    (void)db->Close();
  }
  si::RocksSetup setup;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  std::unique_ptr<rocksdb::DB> db;
};

using StoreDurabilityTest = StoreFixture;

// A RocksDB database with only some of the store's families, as a creation
// killed half-way (RocksDB creates them one MANIFEST edit at a time) leaves.
void MakeHalfCreated(const std::string& path, size_t families, bool with_marker) {
  std::filesystem::create_directory(path);
  if (with_marker) std::ofstream(path + "/" + si::kWriterLockFileName).put('\0');
  si::RocksSetup setup = si::MakeRocksSetup();
  setup.db.create_if_missing = true;
  setup.cfs.resize(families);
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(setup.db, path, setup.cfs, &cfs, &raw).ok());
  for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
  (void)raw->Close();
  delete raw;
}

TEST(StoreCreation, ACreationKilledBeforeEveryFamilyExistedIsFinishedByTheNextWriter) {
  testing::TempDir dir;
  for (size_t families : {1u, 2u, 5u}) {
    const std::string path = dir.Sub("half-" + std::to_string(families));
    MakeHalfCreated(path, families, /*with_marker=*/true);
    Options ro;
    ro.read_only = true;
    EXPECT_TRUE(Store::Open(ro, path).status().IsNotFound()) << families;
    auto s = Store::Open(Options{}, path);
    ASSERT_TRUE(s.ok()) << families << ": " << s.status().ToString();
    auto ns = (*s)->RegisterNamespace(testing::TestSpec());
    ASSERT_TRUE(ns.ok());
    s->reset();
    EXPECT_TRUE(Store::Open(ro, path).ok()) << "finished: a reader opens it now";
  }
  // Every family there, but killed before the format version and the first
  // watermark were written: nothing was committed, so the next open finishes.
  {
    const std::string path = dir.Sub("no-format-record");
    MakeHalfCreated(path, si::RocksSetup{si::MakeRocksSetup()}.cfs.size(), /*with_marker=*/true);
    auto s = Store::Open(Options{}, path);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE((*s)->RegisterNamespace(testing::TestSpec()).ok());
  }
  // The same RocksDB layout without the store's marker is someone else's.
  const std::string foreign = dir.Sub("foreign");
  MakeHalfCreated(foreign, 1, /*with_marker=*/false);
  Status st = Store::Open(Options{}, foreign).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("not an auxstore store"), std::string::npos) << st.ToString();
}

TEST_F(StoreDurabilityTest, SyncPutAdvancesTheDurableWatermark) {
  PutOpaque(PrefixFromSeed(1), 100, 1);
  PutOpaque(PrefixFromSeed(2), 2u << 20, 2);  // ingest path
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.commit_seq, 2u);
  EXPECT_EQ(s.durable_watermark, 2u);
  EXPECT_EQ(si::ReadWatermark(path()).value(), 2u);
}

TEST_F(StoreDurabilityTest, AsyncPutsBecomeDurableAtFlush) {
  Close();
  options_.durability = Durability::kAsync;
  Open();
  PutOpaque(PrefixFromSeed(1), 100, 1);
  PutOpaque(PrefixFromSeed(2), 2u << 20, 2);
  EXPECT_EQ(store_->Stats().durable_watermark, 0u);
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(store_->Stats().durable_watermark, 2u);
  Reopen();
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(1)).ok());
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(2)).ok());
}

TEST_F(StoreDurabilityTest, LostCommitsAreDetectedAtOpen) {
  PutOpaque(PrefixFromSeed(1), 100, 1);
  Close();
  // Simulate a WAL/MANIFEST truncation: the watermark vouches for more
  // commits than RocksDB can recover.
  ASSERT_TRUE(si::WriteWatermark(path(), 5).ok());
  auto s = Store::Open(options_, path());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsCorruption());
  EXPECT_NE(s.status().message().find("lost committed snapshots"), std::string::npos)
      << s.status().message();
  options_.accept_data_loss = true;
  Open();
  EXPECT_EQ(store_->Stats().lost_commits_at_open, 4u);
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(1)).ok());
  // Accepting the loss brings the watermark down to what is there: a normal
  // open works again and new commits are vouched for from there on.
  EXPECT_EQ(store_->Stats().durable_watermark, 1u);
  PutOpaque(PrefixFromSeed(2), 100, 2);
  options_.accept_data_loss = false;
  Reopen();
  EXPECT_EQ(store_->Stats().durable_watermark, 2u);
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(2)).ok());
}

TEST_F(StoreDurabilityTest, MissingOrDamagedWatermarkIsRefused) {
  PutOpaque(PrefixFromSeed(1), 100, 1);
  Close();
  const std::string wm = path() + "/" + si::kWatermarkFileName;
  std::filesystem::remove(wm);
  auto s = Store::Open(options_, path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("lost its durable watermark"), std::string::npos);
  std::ofstream(wm) << "auxstore-watermark v1 1 0000000000000000\n";
  s = Store::Open(options_, path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("damaged"), std::string::npos) << s.status().message();
}

// A store of another format version is refused, read-only or not, naming
// its version and what to do: an older one names `auxstore migrate`, a newer
// one says so.
struct VersionRefusal {
  uint64_t version;
  const char* says;
  const char* name;
};

class StoreFormatVersionRefusal : public StoreDurabilityTest,
                                  public ::testing::WithParamInterface<VersionRefusal> {};

TEST_P(StoreFormatVersionRefusal, IsNotSupportedNamingTheVersionAndTheWayForward) {
  const VersionRefusal& v = GetParam();
  Close();
  {
    RawDb raw(path());
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(raw.db
                    ->Put(wo, raw.cfs[si::kMeta], si::kFormatVersionKey,
                          si::EncodeMetaU64(si::kFormatVersionKey, v.version))
                    .ok());
  }
  for (bool read_only : {false, true}) {
    SCOPED_TRACE(read_only ? "read-only" : "read-write");
    options_.read_only = read_only;
    auto s = Store::Open(options_, path());
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kNotSupported);
    EXPECT_NE(s.status().message().find("format version " + std::to_string(v.version)),
              std::string::npos)
        << s.status().message();
    EXPECT_NE(s.status().message().find(v.says), std::string::npos) << s.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Versions, StoreFormatVersionRefusal,
    ::testing::Values(VersionRefusal{1, "auxstore migrate", "One"},
                      VersionRefusal{si::kStoreFormatVersion + 1, "newer", "Newer"}),
    [](const ::testing::TestParamInfo<VersionRefusal>& p) { return std::string(p.param.name); });

TEST_F(StoreDurabilityTest, PlainRocksDbDirectoryIsNotMistakenForAStore) {
  Close();
  testing::TempDir other;
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, other.path(), &db).ok());
    delete db;
  }
  auto s = Store::Open(options_, other.path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not an auxstore store"), std::string::npos);
}

TEST_F(StoreDurabilityTest, OrphanRecordsOfAnInterruptedIngestAreSwept) {
  // Records and intent present, run record and manifest never committed:
  // what a crash between ingest and commit leaves.
  PutOpaque(PrefixFromSeed(1), 2u << 20, 1);
  const PutId put = store_->GetManifest(ns_, PrefixFromSeed(1))->put_id;
  const std::string skey = si::SnapshotKey(ns_, PrefixFromSeed(1));
  const std::string pkey = si::PutKey(ns_, put);
  Close();
  {
    RawDb raw(path());
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(raw.db->Delete(wo, raw.cfs[si::kManifests], skey).ok());
    ASSERT_TRUE(raw.db->Delete(wo, raw.cfs[si::kRuns], pkey).ok());
    ASSERT_TRUE(raw.db->Delete(wo, raw.cfs[si::kRefs], si::RefKey(ns_, put, put)).ok());
    ASSERT_TRUE(raw.db
                    ->Put(wo, raw.cfs[si::kMeta], si::kIntentPrefix + pkey,
                          si::EncodeMeta(si::kIntentPrefix + pkey, skey))
                    .ok());
  }
  options_.accept_data_loss = true;  // the manifest delete bypassed the commit counter: fine here
  Open();
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(1)).status().IsNotFound());
  ASSERT_TRUE(store_->RunMaintenance().ok());
  EXPECT_EQ(store_->Stats().orphans_removed, 1u);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->records_checked, 0u);
  EXPECT_EQ(v->orphan_records, 0u) << "every record of the interrupted put is gone";
}

}  // namespace
}  // namespace auxstore
