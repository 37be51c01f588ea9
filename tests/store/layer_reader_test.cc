// The layer reader (include/auxstore/layer_reader.h): a layer's verified
// bytes piece by piece, in order, and the quarantine decision made by the
// reader itself, against real bytes damaged in a real store.
#include "auxstore/layer_reader.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <vector>

#include "format/envelope.h"
#include "store/bytes.h"
#include "store/keys.h"
#include "store/rocks/rocks_options.h"
#include "tests/store/record_damage.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::RandomBytes;
namespace si = store_internal;

constexpr uint32_t kChunk = 4096;
constexpr uint32_t kBlock = 16;

bool IsOutOfRange(const Status& s) { return s.code() == StatusCode::kOutOfRange; }

class LayerReaderTest : public testing::StoreFixture {
 protected:
  void SetUp() override {
    testing::StoreFixture::SetUp();
    options_.chunk_bytes = kChunk;  // several pieces per layer
    options_.background_maintenance = false;
    Reopen();
  }

  std::unique_ptr<LayerReader> OpenReader(const Prefix& p, uint32_t layer,
                                          PieceChecks checks = PieceChecks::kEachRecord) {
    auto m = store_->GetManifest(ns_, p);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return nullptr;
    auto r = store_->OpenLayer(ns_, p, *m, layer, checks);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }

  // Reads every piece into a blob-sized buffer, the header first, checking
  // that the pieces come in blob order and tile the blob.
  static std::vector<uint8_t> ReadAll(LayerReader& r) {
    std::vector<uint8_t> out(r.entry().bytes, 0);
    std::copy(r.entry().header.begin(), r.entry().header.end(), out.begin());
    uint64_t at = r.entry().header.size();
    while (!r.done()) {
      const size_t before = r.next();
      auto piece = r.ReadInto(std::span(out).subspan(at));
      EXPECT_TRUE(piece.ok()) << piece.status().ToString();
      if (!piece.ok()) return {};
      EXPECT_EQ(piece->blob_offset, at) << "piece " << before << " out of order";
      EXPECT_EQ(r.next(), before + 1);
      at += piece->bytes;
    }
    EXPECT_EQ(at, r.entry().bytes);
    return out;
  }

  // Flips a byte in the first data block of the records table file whose
  // smallest key is `key` (the store closed): real damage in a real file.
  bool DamageFirstBlockOfFileHolding(const std::string& key) {
    si::RocksSetup setup = si::MakeRocksSetup();
    std::vector<rocksdb::ColumnFamilyHandle*> cfs;
    rocksdb::DB* raw = nullptr;
    if (!rocksdb::DB::OpenForReadOnly(setup.db, path(), setup.cfs, &cfs, &raw).ok()) return false;
    std::vector<rocksdb::LiveFileMetaData> files;
    raw->GetLiveFilesMetaData(&files);
    std::string target;
    for (const auto& f : files) {
      if (f.column_family_name == si::kRecordsCf && f.smallestkey == key) {
        target = f.db_path + "/" + f.name;
      }
    }
    for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
    delete raw;
    if (target.empty()) return false;
    std::fstream f(target, std::ios::in | std::ios::out | std::ios::binary);
    char c = 0;
    f.seekg(64);
    f.read(&c, 1);
    c ^= 0x5a;
    f.seekp(64);
    f.write(&c, 1);
    return f.good();
  }

  // The key of chunk `chunk` of the opaque layer 0 of `p` (its one array).
  std::string ChunkKey(const Prefix& p, uint32_t chunk) {
    return si::RecordKey(ns_, store_->GetManifest(ns_, p)->put_id, 0, 0, chunk);
  }
};

TEST_F(LayerReaderTest, YieldsEveryPieceInOrderWithTheExactBytes) {
  const Prefix p = PrefixFromSeed(1);
  const auto blob = PutOpaque(p, 5 * kChunk + 123, 1);
  auto r = OpenReader(p, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pieces().size(), 6u);
  EXPECT_EQ(ReadAll(*r), blob);
  EXPECT_TRUE(r->done());
  std::vector<uint8_t> room(kChunk);
  EXPECT_TRUE(IsOutOfRange(r->ReadInto(room).status())) << "nothing is left to read";

  // The same bytes as views, without a copy.
  r = OpenReader(p, 0);
  std::vector<uint8_t> viewed;
  while (!r->done()) {
    auto v = r->Read();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->piece.blob_offset, viewed.size());
    viewed.insert(viewed.end(), v->bytes.begin(), v->bytes.end());
  }
  EXPECT_EQ(viewed, blob);
}

TEST_F(LayerReaderTest, APagedLayerReadsItsPagesFromThePutsThatStoredThem) {
  const NamespaceSpec spec = testing::TestSpec();
  std::vector<uint32_t> tokens(128);
  for (uint32_t t = 0; t < tokens.size(); ++t) tokens[t] = 1000 + t;
  const auto keys = RandomBytes(tokens.size() * spec.qsa.hd * 2, 5);
  auto put = [&](const Prefix& p, uint64_t n) {
    auto blob =
        EncodeQsaBlob(n, n / spec.qsa.ratio, ByteSpan(keys).first(n * spec.qsa.hd * 2), spec.qsa.hd)
            .value();
    const auto chain = PrefixHashes(std::span(tokens).first(n), kBlock, 0);
    PutOptions o;
    o.block_chain = chain;
    o.block_size = kBlock;
    LayerBlob l{0, Kind::kQsa, blob};
    EXPECT_TRUE(store_->PutSnapshot(ns_, p, n, {&l, 1}, o).ok());
    return blob;
  };
  put(PrefixFromSeed(1), 64);
  const auto longer = put(PrefixFromSeed(2), 128);
  auto r = OpenReader(PrefixFromSeed(2), 0);
  ASSERT_TRUE(r);
  std::set<PutId> owners;
  for (const LayerPiece& piece : r->pieces()) owners.insert(piece.owner);
  EXPECT_EQ(owners.size(), 2u) << "the shorter snapshot's put stored the first pages";
  EXPECT_EQ(ReadAll(*r), longer);
}

TEST_F(LayerReaderTest, ADamagedPieceQuarantinesAndNeitherItNorTheLastIsYielded) {
  const Prefix p = PrefixFromSeed(1), other = PrefixFromSeed(2);
  PutOpaque(p, 4 * kChunk, 1);
  const auto kept = PutOpaque(other, 2 * kChunk, 2);
  const std::string key = ChunkKey(p, 2);
  Close();
  testing::RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() / 2] ^= 0x10; });
  Open();
  auto r = OpenReader(p, 0);
  ASSERT_TRUE(r);
  std::vector<uint8_t> dst(kChunk);
  ASSERT_TRUE(r->ReadInto(dst).ok());
  ASSERT_TRUE(r->ReadInto(dst).ok());
  auto damaged = r->ReadInto(dst);
  EXPECT_TRUE(damaged.status().IsCorruption()) << damaged.status().ToString();
  EXPECT_NE(damaged.status().message().find("chunk 2"), std::string::npos)
      << damaged.status().message();
  EXPECT_EQ(r->next(), 2u) << "the damaged piece was not yielded";
  auto again = r->ReadInto(dst);
  EXPECT_TRUE(again.status().IsCorruption()) << "a spent reader yields nothing more";
  EXPECT_EQ(r->next(), 2u);
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
  EXPECT_EQ(store_->GetLayer(ns_, other, 0).value(), kept) << "only the damaged snapshot goes";
}

// Checked through the layer digest alone (the restore pipeline's reads): the
// damaged piece is copied like the others, but the last piece is never
// yielded, the damaged record is named and the same snapshots are
// quarantined as a reader checking each record would have.
TEST_F(LayerReaderTest, ADamagedPieceCheckedByTheLayerDigestFailsTheLastPieceAndIsNamed) {
  const Prefix p = PrefixFromSeed(1), other = PrefixFromSeed(2);
  const auto blob = PutOpaque(p, 4 * kChunk, 1);
  const auto kept = PutOpaque(other, 2 * kChunk, 2);
  {  // intact, both ways give the same bytes
    auto r = OpenReader(p, 0, PieceChecks::kLayerDigest);
    ASSERT_TRUE(r);
    EXPECT_EQ(ReadAll(*r), blob);
  }
  const std::string key = ChunkKey(p, 2);
  Close();
  testing::RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() / 2] ^= 0x10; });
  Open();
  auto r = OpenReader(p, 0, PieceChecks::kLayerDigest);
  ASSERT_TRUE(r);
  std::vector<uint8_t> dst(kChunk);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(r->ReadInto(dst).ok()) << "piece " << i;
  EXPECT_EQ(store_->Stats().quarantines, 0u) << "nothing is decided before the last piece";
  auto last = r->ReadInto(dst);
  EXPECT_TRUE(last.status().IsCorruption()) << last.status().ToString();
  EXPECT_NE(last.status().message().find("chunk 2"), std::string::npos)
      << "the damaged record is named: " << last.status().message();
  EXPECT_EQ(r->next(), 3u) << "the last piece was not yielded";
  EXPECT_FALSE(r->done());
  EXPECT_TRUE(r->ReadInto(dst).status().IsCorruption()) << "a spent reader yields nothing more";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
  EXPECT_EQ(store_->GetLayer(ns_, other, 0).value(), kept) << "only the damaged snapshot goes";
}

TEST_F(LayerReaderTest, ADigestMismatchIsCaughtBeforeTheLastPiece) {
  // Every record is intact on its own (a valid envelope under its own
  // key), but one holds bytes the manifest never named.
  const Prefix p = PrefixFromSeed(1);
  PutOpaque(p, 3 * kChunk, 1);
  const std::string key = ChunkKey(p, 1);
  Close();
  testing::RewriteRecord(path(), key, [&](std::string* v) {
    std::string payload = v->substr(kEnvelopeHeaderBytes);
    payload[7] ^= 0x01;
    *v = EncodeEnvelope(si::Bytes(key), RecordKind::kOpaqueChunk, si::Bytes(payload));
  });
  Open();
  auto r = OpenReader(p, 0);
  ASSERT_TRUE(r);
  std::vector<uint8_t> dst(kChunk);
  EXPECT_TRUE(r->ReadInto(dst).ok());
  EXPECT_TRUE(r->ReadInto(dst).ok()) << "the altered record verifies on its own";
  auto last = r->ReadInto(dst);
  EXPECT_TRUE(last.status().IsCorruption()) << last.status().ToString();
  EXPECT_NE(last.status().message().find("digest"), std::string::npos) << last.status().message();
  EXPECT_FALSE(r->done()) << "the last piece was not yielded";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
}

TEST_F(LayerReaderTest, ASnapshotReplacedWhileReadIsNotFoundAndNothingIsQuarantined) {
  const Prefix p = PrefixFromSeed(1);
  PutOpaque(p, 3 * kChunk, 1);
  auto r = OpenReader(p, 0);
  ASSERT_TRUE(r);
  // A writer replaces the snapshot after the reader opened it: the records
  // the reader's manifest names are gone.
  ASSERT_TRUE(store_->Erase(ns_, p).ok());
  const auto now = PutOpaque(p, 2 * kChunk, 2);
  std::vector<uint8_t> dst(kChunk);
  auto read = r->ReadInto(dst);
  EXPECT_TRUE(read.status().IsNotFound()) << read.status().ToString();
  EXPECT_EQ(store_->Stats().quarantines, 0u);
  EXPECT_EQ(store_->GetLayer(ns_, p, 0).value(), now) << "the new snapshot is untouched";
}

TEST_F(LayerReaderTest, ADestinationTooSmallWritesNothingAndMovesNothing) {
  const Prefix p = PrefixFromSeed(1);
  const auto blob = PutOpaque(p, 2 * kChunk, 1);
  auto r = OpenReader(p, 0);
  ASSERT_TRUE(r);
  std::vector<uint8_t> small(kChunk - 1, 0xee);
  auto read = r->ReadInto(small);
  EXPECT_TRUE(IsOutOfRange(read.status())) << read.status().ToString();
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0xee; }));
  EXPECT_EQ(r->next(), 0u);
  EXPECT_EQ(ReadAll(*r), blob) << "the reader goes on once given room";

  std::vector<uint8_t> whole(blob.size() - 1, 0xee);
  EXPECT_TRUE(IsOutOfRange(store_->ReadLayerInto(ns_, p, 0, whole).status()));
  EXPECT_TRUE(std::all_of(whole.begin(), whole.end(), [](uint8_t b) { return b == 0xee; }));
}

TEST_F(LayerReaderTest, AMissingLayerIsNotFoundAndAnEmptyLayerIsDoneAtOnce) {
  const Prefix p = PrefixFromSeed(1);
  PutOpaque(p, 0, 1);
  auto m = store_->GetManifest(ns_, p);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(store_->OpenLayer(ns_, p, *m, 7).status().IsNotFound());
  auto r = OpenReader(p, 0);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->done());
  EXPECT_TRUE(r->pieces().empty());
}

// ReadLayer reads ahead; a piece of 1 MiB or more is then read through an
// iterator of its own, held only until the next piece (layer_reader.cc).
TEST_F(LayerReaderTest, ReadLayerStreamsMultiMiBPiecesInOrderAndStopsAtTheDamagedOne) {
  options_.chunk_bytes = 1u << 20;
  Reopen();
  const Prefix p = PrefixFromSeed(1), other = PrefixFromSeed(2);
  const auto blob = PutOpaque(p, 5 * options_.chunk_bytes + 123, 1);
  const auto kept = PutOpaque(other, 2 * options_.chunk_bytes, 2);
  std::vector<uint8_t> got;
  ASSERT_TRUE(store_
                  ->ReadLayer(ns_, p, 0,
                              [&](uint64_t offset, ByteSpan piece) {
                                EXPECT_EQ(offset, got.size()) << "pieces out of order";
                                got.insert(got.end(), piece.begin(), piece.end());
                                return Status::Ok();
                              })
                  .ok());
  EXPECT_EQ(got, blob);

  const std::string key = ChunkKey(p, 3);
  Close();
  testing::RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() / 2] ^= 0x10; });
  Open();
  std::vector<uint64_t> yielded;
  const Status st = store_->ReadLayer(ns_, p, 0, [&](uint64_t offset, ByteSpan piece) {
    EXPECT_TRUE(std::equal(piece.begin(), piece.end(), blob.begin() + offset));
    yielded.push_back(offset);
    return Status::Ok();
  });
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("chunk 3"), std::string::npos) << st.message();
  EXPECT_EQ(yielded, (std::vector<uint64_t>{0, 1u << 20, 2u << 20})) << "nothing from chunk 3 on";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
  EXPECT_EQ(store_->GetLayer(ns_, other, 0).value(), kept) << "only the damaged snapshot goes";
}

// A Seek (and, with few L0 files, a point lookup) reads blocks of table
// files that cannot hold its key: a damaged first block in the next put's
// file used to fail a healthy record sorting just before it, and quarantine
// its snapshot. Now that read is a store problem (nothing quarantined) that
// repair clears; only the damaged snapshot goes.
TEST_F(LayerReaderTest, DamageInAnotherTableFileNeverQuarantinesAHealthySnapshot) {
  const Prefix a = PrefixFromSeed(1), b = PrefixFromSeed(2);
  const auto blob_a = PutOpaque(a, 3 * kChunk + 17, 1);
  const std::string key_a = ChunkKey(a, 0);
  Reopen();  // a clean close: a's records in a table file of their own
  const auto blob_b = PutOpaque(b, 3 * kChunk + 17, 2);
  const std::string key_b = ChunkKey(b, 0);
  Close();  // and b's in the next one
  const bool a_first = key_a < key_b;
  const Prefix healthy = a_first ? a : b, damaged = a_first ? b : a;
  const auto& healthy_blob = a_first ? blob_a : blob_b;
  ASSERT_TRUE(DamageFirstBlockOfFileHolding(a_first ? key_b : key_a));
  Open();

  auto got = store_->GetLayer(ns_, healthy, 0);
  if (got.ok()) {
    EXPECT_EQ(*got, healthy_blob);
  } else {
    EXPECT_FALSE(got.status().IsCorruption()) << got.status().ToString();
    EXPECT_NE(got.status().message().find("verify --repair"), std::string::npos)
        << got.status().ToString();
  }
  EXPECT_EQ(store_->Stats().quarantines, 0u);
  EXPECT_TRUE(store_->GetManifest(ns_, healthy).ok()) << "a healthy snapshot stays";

  auto report = store_->Verify();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  for (const auto& c : report->corrupt) EXPECT_NE(c.prefix, healthy) << c.why;
  ASSERT_TRUE(store_->Repair(*report).ok());
  EXPECT_EQ(store_->GetLayer(ns_, healthy, 0).value(), healthy_blob);
  EXPECT_FALSE(store_->GetLayer(ns_, damaged, 0).ok()) << "the damaged one is not read back";
  auto again = store_->Verify();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->corrupt.empty());
}

}  // namespace
}  // namespace auxstore
