// Reads into caller memory and streams take pieces straight from the
// records' table files (store/direct_records.h): the bytes are exact, every
// damage is still found, named and quarantined as RocksDB's reads name it,
// and whatever the direct reader does not understand goes through RocksDB.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "auxstore/prefix.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/rocks/rocks_options.h"
#include "tests/store/record_damage.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::RandomBytes;

constexpr uint32_t kChunk = 1u << 20;

// Flips bit `mask` of the byte `delta` bytes after the one place in the
// store's table files where `pattern` is found. False when it is in none.
bool FlipInTableFiles(const std::string& dir, const std::vector<uint8_t>& pattern, long delta,
                      uint8_t mask) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".sst") continue;
    std::vector<uint8_t> bytes;
    {
      std::ifstream in(e.path(), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    auto at = std::search(bytes.begin(), bytes.end(), pattern.begin(), pattern.end());
    if (at == bytes.end()) continue;
    bytes[(at - bytes.begin()) + delta] ^= mask;
    std::ofstream out(e.path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return true;
  }
  return false;
}

class DirectRecordsTest : public testing::StoreFixture {
 protected:
  void SetUp() override {
    testing::StoreFixture::SetUp();
    options_.chunk_bytes = kChunk;
    options_.background_maintenance = false;
    Reopen();
  }

  store_internal::DbStore& Db() { return dynamic_cast<store_internal::DbStore&>(*store_); }
  uint64_t DirectReads() { return Db().DirectRecordsForTest()->reads(); }

  std::vector<uint8_t> Put(const Prefix& p, size_t bytes, uint64_t seed) {
    return PutOpaque(p, bytes, seed);
  }
  std::string ChunkKey(const Prefix& p, uint32_t chunk) {
    return store_internal::RecordKey(ns_, store_->GetManifest(ns_, p)->put_id, 0, 0, chunk);
  }
  // ReadLayerInto of layer 0 of `p` (`bytes` long) fails with Corruption
  // naming chunk `chunk`.
  void ExpectCorruptionNaming(const Prefix& p, size_t bytes, uint32_t chunk) {
    std::vector<uint8_t> dst(bytes);
    const auto got = store_->ReadLayerInto(ns_, p, 0, dst);
    ASSERT_TRUE(got.status().IsCorruption()) << got.status().ToString();
    const std::string named = "layer 0 array 0 chunk " + std::to_string(chunk) + " of put";
    EXPECT_NE(got.status().message().find(named), std::string::npos) << got.status().message();
  }
  // Reopens the store (recovery flushes the memtable into a table file),
  // flips bit `mask` `delta` bytes after `pattern` in its table files while
  // it is closed, and opens it again.
  void FlushAndFlip(const std::vector<uint8_t>& pattern, long delta, uint8_t mask) {
    Close();
    Open();
    Close();
    ASSERT_TRUE(FlipInTableFiles(path(), pattern, delta, mask));
    Open();
  }
  // ReadLayer of layer 0 of `p`; `*sunk` says whether any bytes reached the sink.
  Status Stream(const Prefix& p, bool* sunk) {
    return store_->ReadLayer(ns_, p, 0, [sunk](uint64_t, ByteSpan) {
      *sunk = true;
      return Status::Ok();
    });
  }
  // `n` bytes of `blob` from `at`: a pattern to find its chunk on disk by.
  static std::vector<uint8_t> Slice(const std::vector<uint8_t>& blob, size_t at, size_t n = 32) {
    return {blob.begin() + long(at), blob.begin() + long(at + n)};
  }
};

TEST_F(DirectRecordsTest, PiecesAreReadFromTheirTableFileExactly) {
  const Prefix p = PrefixFromSeed(1), small = PrefixFromSeed(2);
  const size_t big = 3 * kChunk + 5000;  // pieces of 1, 1, 1 MiB and 5000 bytes
  const auto blob = Put(p, big, 1);
  const auto little = Put(small, 40000, 2);
  std::vector<uint8_t> dst(big, 0xee);
  ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), big);
  EXPECT_EQ(dst, blob);
  EXPECT_EQ(DirectReads(), 4u) << "the three 1 MiB pieces and the 5000-byte tail";

  std::vector<uint8_t> few(40000);
  ASSERT_EQ(store_->ReadLayerInto(ns_, small, 0, few).value(), 40000u);
  EXPECT_EQ(few, little);
  EXPECT_EQ(DirectReads(), 4u) << "a small put goes through the WAL: RocksDB reads its memtable";
  Close();
  Open();  // recovery flushes the memtable into a table file
  std::fill(few.begin(), few.end(), 0xee);
  ASSERT_EQ(store_->ReadLayerInto(ns_, small, 0, few).value(), 40000u);
  EXPECT_EQ(few, little);
  EXPECT_EQ(DirectReads(), 1u) << "now from its table file";

  Db().DirectRecordsForTest()->set_enabled(false);
  std::fill(dst.begin(), dst.end(), 0xee);
  ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), big);
  EXPECT_EQ(dst, blob) << "RocksDB's read gives the same bytes";
  EXPECT_EQ(DirectReads(), 1u);
  Db().DirectRecordsForTest()->set_enabled(true);

  // Compaction moves the records into other files: the reader follows.
  ASSERT_TRUE(store_->Compact({}).ok());
  std::fill(dst.begin(), dst.end(), 0xee);
  ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), big);
  EXPECT_EQ(dst, blob);
  EXPECT_EQ(DirectReads(), 5u);
}

// Small records are read from the table files too (once out of the
// memtable), into caller memory and streamed, each from one read of its
// whole block (sizes on both sides of the 8 KiB a large record's head
// read takes). The bytes are exact, and damage in them is named.
TEST_F(DirectRecordsTest, SmallRecordsAreReadFromTheirBlocksExactly) {
  for (const size_t bytes : {size_t{1}, size_t{300}, size_t{5000}, size_t{8150}, size_t{12345}}) {
    SCOPED_TRACE(bytes);
    const Prefix p = PrefixFromSeed(bytes);
    const auto blob = Put(p, bytes, bytes);
    Close();
    Open();  // out of the memtable
    const uint64_t before = DirectReads();
    std::vector<uint8_t> dst(bytes, 0xee);
    ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), bytes);
    EXPECT_EQ(dst, blob);
    std::vector<uint8_t> streamed;
    ASSERT_TRUE(store_
                    ->ReadLayer(ns_, p, 0,
                                [&](uint64_t, ByteSpan b) {
                                  streamed.insert(streamed.end(), b.begin(), b.end());
                                  return Status::Ok();
                                })
                    .ok());
    EXPECT_EQ(streamed, blob);
    EXPECT_EQ(DirectReads(), before + 2) << "one read into memory, one streamed";
  }

  const Prefix damaged = PrefixFromSeed(77), kept = PrefixFromSeed(78);
  const auto blob = Put(damaged, 6000, 77);
  const auto other = Put(kept, 6000, 78);
  ASSERT_NO_FATAL_FAILURE(FlushAndFlip(Slice(blob, 3000), 5, 0x04));
  ExpectCorruptionNaming(damaged, 6000, 0);
  EXPECT_EQ(DirectReads(), 0u) << "its block's checksum failed: RocksDB's read named it";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  std::vector<uint8_t> again(6000);
  ASSERT_EQ(store_->ReadLayerInto(ns_, kept, 0, again).value(), 6000u);
  EXPECT_EQ(again, other);
  const Status streamed =
      store_->ReadLayer(ns_, kept, 0, [](uint64_t, ByteSpan) { return Status::Ok(); });
  EXPECT_TRUE(streamed.ok()) << streamed.ToString();
  EXPECT_EQ(DirectReads(), 2u);
}

// Small records share data blocks. Damage in one fails the block's
// checksum, and so RocksDB's read and the scrub of every record in the
// block: the direct reads of its neighbours fail alike (the scrub never
// calls a snapshot damaged that then reads back).
TEST_F(DirectRecordsTest, ARecordBesideDamagedBytesInItsBlockFailsAsRocksDBsReadDoes) {
  const Prefix a = PrefixFromSeed(1), b = PrefixFromSeed(2), c = PrefixFromSeed(3);
  const auto blob_a = Put(a, 700, 1);
  Put(b, 700, 2);
  Put(c, 700, 3);
  // The three records flushed into one table file, one block.
  ASSERT_NO_FATAL_FAILURE(FlushAndFlip(Slice(blob_a, 300), 0, 0x01));
  std::vector<uint8_t> dst(700);
  const auto into = store_->ReadLayerInto(ns_, b, 0, dst);
  EXPECT_TRUE(into.status().IsCorruption()) << into.status().ToString();
  bool sunk = false;
  const Status streamed = Stream(c, &sunk);
  EXPECT_TRUE(streamed.IsCorruption()) << streamed.ToString();
  EXPECT_FALSE(sunk);
  EXPECT_EQ(DirectReads(), 0u);
  EXPECT_EQ(store_->Stats().quarantines, 2u) << "b and c, each named by RocksDB's read";
}

// A table file cut short under the open store: a stream's whole-block
// read comes up short and leaves the piece to RocksDB, which names the
// damage; no byte reaches the sink.
TEST_F(DirectRecordsTest, AStreamedSmallRecordOfATableFileCutShortGoesToRocksDB) {
  const Prefix p = PrefixFromSeed(1);
  Put(p, 20000, 1);
  Close();
  Open();  // flushed into a table file
  ASSERT_TRUE(store_->ReadLayer(ns_, p, 0, [](uint64_t, ByteSpan) { return Status::Ok(); }).ok());
  ASSERT_EQ(DirectReads(), 1u);
  std::string sst;
  for (const auto& e : std::filesystem::directory_iterator(path())) {
    if (e.path().extension() == ".sst" && std::filesystem::file_size(e.path()) > 20000) {
      sst = e.path().string();
    }
  }
  ASSERT_FALSE(sst.empty());
  std::filesystem::resize_file(sst, 10000);  // inside the record's block
  bool sunk = false;
  const Status st = Stream(p, &sunk);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_FALSE(sunk);
  EXPECT_EQ(DirectReads(), 1u) << "the second read went to RocksDB";
}

// A stream's small record damaged in its table file fails its checksum
// there: the piece goes to RocksDB, which names it; the sink never sees it.
TEST_F(DirectRecordsTest, AStreamedSmallRecordDamagedOnDiskNeverReachesTheSink) {
  const Prefix p = PrefixFromSeed(1);
  const auto blob = Put(p, 20000, 1);
  ASSERT_NO_FATAL_FAILURE(FlushAndFlip(Slice(blob, 15000), 3, 0x20));
  bool sunk = false;
  const Status st = Stream(p, &sunk);
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("layer 0 array 0 chunk 0 of put"), std::string::npos) << st.message();
  EXPECT_FALSE(sunk);
  EXPECT_EQ(DirectReads(), 0u);
  EXPECT_EQ(store_->Stats().quarantines, 1u);
}

TEST_F(DirectRecordsTest, DamagedPayloadBytesFailTheLayerDigestAndAreNamedAndQuarantined) {
  const Prefix p = PrefixFromSeed(1), other = PrefixFromSeed(2);
  const auto blob = Put(p, 3 * kChunk, 1);
  const auto kept = Put(other, 2 * kChunk, 2);
  Close();
  ASSERT_TRUE(FlipInTableFiles(path(), Slice(blob, kChunk + 4096), 100, 0x10));
  Open();
  ExpectCorruptionNaming(p, 3 * kChunk, 1);
  EXPECT_EQ(DirectReads(), 3u) << "the damaged piece too was read directly";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
  std::vector<uint8_t> again(2 * kChunk);
  ASSERT_EQ(store_->ReadLayerInto(ns_, other, 0, again).value(), 2 * kChunk);
  EXPECT_EQ(again, kept) << "only the damaged snapshot goes";
}

TEST_F(DirectRecordsTest, ADamagedRecordHeaderSendsThePieceToRocksDBWhichNamesIt) {
  const Prefix p = PrefixFromSeed(1);
  const auto blob = Put(p, 2 * kChunk, 1);
  Close();
  // The envelope's magic, 24 bytes before chunk 1's payload.
  ASSERT_TRUE(FlipInTableFiles(path(), Slice(blob, kChunk), -24, 0x01));
  Open();
  ExpectCorruptionNaming(p, 2 * kChunk, 1);
  EXPECT_EQ(DirectReads(), 1u) << "chunk 0 only";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
}

// ReadLayer's stream reads such pieces from the table file too, into a
// buffer of its reader's, each checked by the record's own checksum before
// the sink sees it: a damaged piece never reaches the sink.
TEST_F(DirectRecordsTest, AStreamedLayerHandsOnlyCheckedPiecesToItsSink) {
  const Prefix p = PrefixFromSeed(1);
  const size_t big = 5 * kChunk + 5000;  // a layer with a file handle of its own
  const auto blob = Put(p, big, 1);
  std::vector<uint8_t> got;
  ASSERT_TRUE(store_
                  ->ReadLayer(ns_, p, 0,
                              [&](uint64_t offset, ByteSpan bytes) {
                                EXPECT_EQ(offset, got.size());
                                got.insert(got.end(), bytes.begin(), bytes.end());
                                return Status::Ok();
                              })
                  .ok());
  EXPECT_EQ(got, blob);
  EXPECT_EQ(DirectReads(), 6u) << "five 1 MiB pieces and the 5000-byte tail";
  EXPECT_EQ(store_->GetLayer(ns_, p, 0).value(), blob);
  EXPECT_EQ(DirectReads(), 12u);

  Close();
  ASSERT_TRUE(FlipInTableFiles(path(), Slice(blob, 2 * kChunk + 4096), 7, 0x80));
  Open();
  got.clear();
  const Status st = store_->ReadLayer(ns_, p, 0, [&](uint64_t, ByteSpan bytes) {
    got.insert(got.end(), bytes.begin(), bytes.end());
    return Status::Ok();
  });
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("layer 0 array 0 chunk 2 of put"), std::string::npos) << st.message();
  ASSERT_EQ(got.size(), 2 * kChunk) << "chunks 0 and 1 only";
  EXPECT_TRUE(std::equal(got.begin(), got.end(), blob.begin()));
  EXPECT_EQ(DirectReads(), 2u) << "the damaged chunk failed its checksum and went to RocksDB";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
}

// A record written again after its put (here with damage, through raw
// RocksDB) is read where RocksDB reads it: from the memtable while it is
// there, then from the newer level-0 file, never from the older file.
TEST_F(DirectRecordsTest, ARecordWrittenAgainIsReadWhereRocksDBReadsItsNewestValue) {
  const Prefix p = PrefixFromSeed(1);
  Put(p, 2 * kChunk, 1);
  const std::string key = ChunkKey(p, 1);
  Close();
  testing::RewriteRecord(
      path(), key, [](std::string* v) { (*v)[v->size() / 2] ^= 0x02; }, /*flush=*/true);
  Open();
  ExpectCorruptionNaming(p, 2 * kChunk, 1);
  EXPECT_EQ(DirectReads(), 2u) << "both pieces from table files, chunk 1 from the newer one";
}

// A record whose newest value is in a memtable is read there, by RocksDB.
TEST_F(DirectRecordsTest, ARecordInAMemtableIsReadThroughRocksDB) {
  const Prefix p = PrefixFromSeed(1);
  const auto blob = Put(p, 2 * kChunk, 1);
  const std::string key = ChunkKey(p, 1);
  Close();
  testing::RewriteRecord(path(), key, [](std::string*) {});  // the same bytes, in the WAL
  Open();
  std::vector<uint8_t> dst(2 * kChunk);
  ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), 2 * kChunk);
  EXPECT_EQ(dst, blob);
  EXPECT_EQ(DirectReads(), 1u) << "chunk 0 from its table file, chunk 1 from the memtable";
}

// The table files RocksDB deletes (here by a compaction) are closed at
// once: no descriptor of this process holds a deleted file's space.
TEST_F(DirectRecordsTest, ATableFileRocksDBDeletesIsClosedAtOnce) {
  const Prefix p = PrefixFromSeed(1);
  const auto blob = Put(p, 2 * kChunk, 1);
  Put(PrefixFromSeed(2), 2 * kChunk, 2);
  std::vector<uint8_t> dst(2 * kChunk);
  ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), 2 * kChunk);
  ASSERT_EQ(DirectReads(), 2u);
  ASSERT_TRUE(store_->Compact({}).ok());
  auto deleted_held = [&] {
    int held = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
      if (!ec && target.find(path()) == 0 && target.ends_with(" (deleted)")) ++held;
    }
    return held;
  };
  EXPECT_EQ(deleted_held(), 0);
  ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), 2 * kChunk);
  EXPECT_EQ(dst, blob);
  EXPECT_EQ(DirectReads(), 4u);
}

// The footer has no checksum: handles damaged after RocksDB opened the
// table (it keeps what it read then) must not lead the direct reader out
// of bounds. The piece goes to RocksDB, which still reads it right.
TEST_F(DirectRecordsTest, AFooterDamagedWhileTheStoreIsOpenIsNoReasonToCrash) {
  const Prefix p = PrefixFromSeed(1);
  const auto blob = Put(p, 2 * kChunk, 1);
  int damaged = 0;
  for (const auto& e : std::filesystem::directory_iterator(path())) {
    if (e.path().extension() != ".sst") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(std::filesystem::file_size(e.path()) - 53 + 1));
    // metaindex handle: offset 0, size 2^64 - 2 (a varint that parses).
    const uint8_t handle[] = {0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    f.write(reinterpret_cast<const char*>(handle), sizeof handle);
    ++damaged;
  }
  ASSERT_GT(damaged, 0);
  std::vector<uint8_t> dst(2 * kChunk);
  ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), 2 * kChunk);
  EXPECT_EQ(dst, blob);
  EXPECT_EQ(DirectReads(), 0u);
}

// A table file cut short under the open store (after this reader opened
// it) fails the read with IOError naming the file, not Corruption: nothing
// is quarantined for what was only seen past RocksDB. The next read opens
// the file again and leaves the piece to RocksDB, which finds the damage.
TEST_F(DirectRecordsTest, ATableFileCutShortUnderAnOpenStoreIsAnIOErrorNotAQuarantine) {
  const Prefix p = PrefixFromSeed(1);
  Put(p, 2 * kChunk, 1);
  std::vector<uint8_t> dst(2 * kChunk);
  ASSERT_EQ(store_->ReadLayerInto(ns_, p, 0, dst).value(), 2 * kChunk);
  std::string sst;
  for (const auto& e : std::filesystem::directory_iterator(path())) {
    if (e.path().extension() == ".sst" && std::filesystem::file_size(e.path()) > 2 * kChunk) {
      sst = e.path().string();
    }
  }
  ASSERT_FALSE(sst.empty());
  std::filesystem::resize_file(sst, kChunk / 2);  // inside chunk 0's payload
  const auto cut = store_->ReadLayerInto(ns_, p, 0, dst);
  ASSERT_EQ(cut.status().code(), StatusCode::kIOError) << cut.status().ToString();
  EXPECT_NE(cut.status().message().find(sst), std::string::npos) << cut.status().message();
  EXPECT_EQ(store_->Stats().quarantines, 0u);
  const auto again = store_->ReadLayerInto(ns_, p, 0, dst);
  ASSERT_TRUE(again.status().IsCorruption()) << again.status().ToString();
  EXPECT_EQ(store_->Stats().quarantines, 1u) << "RocksDB's truncated block read, named";
  EXPECT_EQ(DirectReads(), 2u) << "only the first read's two pieces";
}

}  // namespace
}  // namespace auxstore
