// Store: altered records are reported as Corruption, never returned, and the
// snapshot is quarantined.
#include <rocksdb/db.h>

#include <filesystem>
#include <fstream>

#include "store/keys.h"
#include "store/rocks/rocks_options.h"
#include "tests/store/record_damage.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::RewriteRecord;
using testing::StoreFixture;
namespace si = store_internal;

class StoreCorruptionTest : public StoreFixture {
 protected:
  // The key of chunk `chunk` of a stored opaque layer 0 (its one array),
  // looked up while the store is open.
  std::string ChunkKey(const Prefix& p, uint32_t chunk) {
    return si::RecordKey(ns_, store_->GetManifest(ns_, p)->put_id, 0, 0, chunk);
  }
};

TEST_F(StoreCorruptionTest, RecordAlteredThroughRawRocksDbIsCorruptionAndQuarantined) {
  const Prefix p = PrefixFromSeed(1);
  PutOpaque(p, 200 * 1024, 1);  // 4 chunks of 64 KiB
  const std::string key = ChunkKey(p, 2);
  Close();
  RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() / 2] ^= 0x10; });
  Open();
  uint64_t delivered = 0;
  Status s = store_->ReadLayer(ns_, p, 0, [&](uint64_t, ByteSpan c) {
    delivered += c.size();
    return Status::Ok();
  });
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("chunk 2"), std::string::npos) << s.message();
  EXPECT_EQ(delivered, 2u * 64 * 1024) << "only the verified chunks before the bad one";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  // Quarantined: later lookups miss instead of failing again.
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
  EXPECT_FALSE(store_->LongestPrefix(ns_, {&p, 1}).value().has_value());
  Reopen();
  EXPECT_EQ(store_->Stats().quarantines, 1u) << "the counter is persisted";
}

TEST_F(StoreCorruptionTest, RecordCopiedUnderAnotherKeyIsDetected) {
  const Prefix a = PrefixFromSeed(1), b = PrefixFromSeed(2);
  PutOpaque(a, 1000, 1);
  PutOpaque(b, 1000, 2);
  const std::string key_a = ChunkKey(a, 0), key_b = ChunkKey(b, 0);
  Close();
  std::string from_a;
  RewriteRecord(path(), key_a, [&](std::string* v) { from_a = *v; });
  RewriteRecord(path(), key_b, [&](std::string* v) { *v = from_a; });
  Open();
  auto r = store_->GetLayer(ns_, b, 0);
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_TRUE(store_->GetLayer(ns_, a, 0).ok());
}

TEST_F(StoreCorruptionTest, MissingChunkIsATornSnapshot) {
  const Prefix p = PrefixFromSeed(1);
  PutOpaque(p, 200 * 1024, 1);
  const std::string key = ChunkKey(p, 3);
  Close();
  {
    si::RocksSetup setup = si::MakeRocksSetup();
    std::vector<rocksdb::ColumnFamilyHandle*> cfs;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(setup.db, path(), setup.cfs, &cfs, &raw).ok());
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(raw->Delete(wo, cfs[si::kRecords], key).ok());
    for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  Open();
  auto r = store_->GetLayer(ns_, p, 0);
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("torn"), std::string::npos) << r.status().message();
}

TEST_F(StoreCorruptionTest, BytesFlippedInAClosedStoresSstAreNeverReturned) {
  // An ingested snapshot is one SST: flip payload bytes in it on disk.
  const Prefix p = PrefixFromSeed(1);
  auto blob = PutOpaque(p, 4u << 20, 7);
  Close();
  std::string sst;
  uintmax_t biggest = 0;
  for (auto& e : std::filesystem::directory_iterator(path())) {
    if (e.path().extension() == ".sst" && e.file_size() > biggest) {
      biggest = e.file_size();
      sst = e.path();
    }
  }
  ASSERT_FALSE(sst.empty());
  {
    std::fstream f(sst, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(biggest / 2));
    const char junk[4] = {'\x5a', '\x5a', '\x5a', '\x5a'};
    f.write(junk, 4);
  }
  Open();
  auto r = store_->GetLayer(ns_, p, 0);
  ASSERT_FALSE(r.ok()) << "wrong bytes must never be returned";
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
}

}  // namespace
}  // namespace auxstore
