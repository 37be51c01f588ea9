// Row ranges of a paged layer (Store::ReadLayerRows, issue 24): only the
// records holding rows [first, last) of each array are read, each verified
// on its own, so the bytes of every range come out exact wherever it lies
// against pages, records and owner puts, damage outside the range does not
// fail it, and damage inside it is Corruption that quarantines the
// snapshot. A layer without pages is still read and verified whole.
#include <rocksdb/db.h>

#include <string>
#include <utility>
#include <vector>

#include "format/layer_layout.h"
#include "store/keys.h"
#include "store/rocks/rocks_options.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::RandomBytes;
namespace si = store_internal;

constexpr uint32_t kBlock = 16;    // rows per page
constexpr uint64_t kTokens = 200;  // 12 full pages and 8 tail rows

class StoreRowsPagedTest : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    // Records of 4 KiB: two QSA pages (128-byte rows), four DSA k/gate pages.
    Close();
    options_.chunk_bytes = 4096;
    Open();
    const NamespaceSpec spec = testing::TestSpec();
    for (uint32_t t = 0; t < kTokens; ++t) tokens_.push_back(1000 + t);
    keys_ = RandomBytes(kTokens * spec.qsa.hd * 2, 11);
    k_ = RandomBytes(kTokens * spec.dsa.index_head_dim * 2, 12);
    g_ = RandomBytes(kTokens * spec.dsa.index_head_dim * 2, 13);
    v_ = RandomBytes(kTokens, 14);
    // The 64-token turn first: the 200-token snapshot shares its pages 0-3
    // (another put's records) and stores pages 4-11 and the tail itself.
    Put(p64_, 64, true);
    blobs_ = Put(p200_, kTokens, true);
  }

  // The snapshot of the first n tokens: layer 0 QSA, layer 1 DSA.
  std::vector<std::vector<uint8_t>> Put(const Prefix& prefix, uint64_t n, bool chained) {
    const NamespaceSpec spec = testing::TestSpec();
    const uint64_t row = uint64_t{spec.dsa.index_head_dim} * 2;
    std::vector<std::vector<uint8_t>> blobs{
        EncodeQsaBlob(n, n / spec.qsa.ratio, ByteSpan(keys_).first(n * spec.qsa.hd * 2),
                      spec.qsa.hd)
            .value(),
        EncodeDsaBlob(n, spec.dsa.index_head_dim, ByteSpan(k_).first(n * row),
                      ByteSpan(g_).first(n * row), ByteSpan(v_).first(n))
            .value()};
    const std::vector<LayerBlob> layers{{0, Kind::kQsa, blobs[0]}, {1, Kind::kDsa, blobs[1]}};
    const auto chain = PrefixHashes(std::span(tokens_).first(n), kBlock, 0);
    PutOptions o;
    if (chained) {
      o.block_chain = chain;
      o.block_size = kBlock;
    }
    Status s = store_->PutSnapshot(ns_, prefix, n, layers, o);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return blobs;
  }

  // Rows [first, last) of every array of `layer`, cut from the blob put.
  std::vector<uint8_t> Expected(const Prefix& prefix, uint32_t layer, uint64_t first, uint64_t last,
                                const std::vector<uint8_t>& blob) {
    const Manifest m = store_->GetManifest(ns_, prefix).value();
    const LayerEntry& e = *m.FindLayer(layer);
    std::vector<uint8_t> out;
    for (size_t a = 0; a < e.row_bytes.size(); ++a) {
      const uint64_t at = ArrayOffset(e, a);
      out.insert(out.end(), blob.begin() + at + first * e.row_bytes[a],
                 blob.begin() + at + last * e.row_bytes[a]);
    }
    return out;
  }

  Result<std::vector<uint8_t>> Rows(const Prefix& prefix, uint32_t layer, uint64_t first,
                                    uint64_t last) {
    std::vector<uint8_t> dst(blobs_[layer].size() + 64, 0xEE);
    AUXSTORE_ASSIGN_OR_RETURN(Store::LayerRows got,
                              store_->ReadLayerRows(ns_, prefix, layer, first, last, dst));
    EXPECT_EQ(got.rows, kTokens);
    for (size_t b = got.bytes; b < dst.size(); ++b) {
      if (dst[b] != 0xEE) {
        ADD_FAILURE() << "byte " << b << " past the rows written";
        break;
      }
    }
    dst.resize(got.bytes);
    return dst;
  }

  // Flips a payload byte of one record, under the store's nose.
  void DamageRecord(const std::string& key) {
    Close();
    {
      si::RocksSetup setup = si::MakeRocksSetup();
      std::vector<rocksdb::ColumnFamilyHandle*> cfs;
      rocksdb::DB* raw = nullptr;
      ASSERT_TRUE(rocksdb::DB::Open(setup.db, path(), setup.cfs, &cfs, &raw).ok());
      std::string v;
      ASSERT_TRUE(raw->Get(rocksdb::ReadOptions(), cfs[si::kRecords], key, &v).ok());
      v[v.size() - 3] ^= 0x08;
      rocksdb::WriteOptions wo;
      wo.sync = true;
      ASSERT_TRUE(raw->Put(wo, cfs[si::kRecords], key, v).ok());
      for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
      delete raw;
    }
    Open();
  }

  PutId PutOf(const Prefix& p) { return store_->GetManifest(ns_, p)->put_id; }

  std::vector<uint32_t> tokens_;
  std::vector<uint8_t> keys_, k_, g_, v_;
  std::vector<std::vector<uint8_t>> blobs_;  // of p200_
  const Prefix p64_ = testing::PrefixFromSeed(64), p200_ = testing::PrefixFromSeed(200);
};

TEST_F(StoreRowsPagedTest, EveryByteOfRangesAtAndAcrossPageRecordAndOwnerBoundaries) {
  const Manifest m = store_->GetManifest(ns_, p200_).value();
  ASSERT_EQ(m.page_tokens, kBlock);
  ASSERT_EQ(m.FindLayer(0)->runs.size(), 2u) << "pages 0-3 of the first put, 4-11 its own";
  const std::vector<std::pair<uint64_t, uint64_t>> ranges{
      {0, kTokens},  // whole
      {0, 16},       // the first page
      {16, 32},      // a page, the second of its record
      {64, 80},      // the first page of the snapshot's own put
      {48, 80},      // across the owners
      {19, 27},      // inside one page
      {10, 70},      // across pages, records and owners
      {190, 200},    // the last full page's end and the tail
      {192, 200},    // the last partial page (the tail)
      {195, 199},    // inside it
      {50, 50},      // empty
  };
  for (uint32_t layer : {0u, 1u}) {
    for (auto [first, last] : ranges) {
      auto got = Rows(p200_, layer, first, last);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(*got == Expected(p200_, layer, first, last, blobs_[layer]))
          << "layer " << layer << " rows [" << first << ", " << last << ")";
    }
  }
}

TEST_F(StoreRowsPagedTest, ReadsOnlyTheRecordsHoldingTheRows) {
  const uint64_t before = store_->Stats().bytes_read;
  auto got = Rows(p200_, 0, 19, 27);  // inside page 1: one record of 4 KiB
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const uint64_t read = store_->Stats().bytes_read - before;
  EXPECT_GT(read, 0u);
  EXPECT_LE(read, 4096u) << "one record, not the layer's " << blobs_[0].size() << " bytes";
}

TEST_F(StoreRowsPagedTest, DamageOutsideTheRangeDoesNotFailItDamageInsideIsCorruption) {
  // Chunk 0 of the first put's QSA stream: rows 0-31 (pages 0 and 1).
  DamageRecord(si::RecordKey(ns_, PutOf(p64_), 0, 0, 0));
  for (auto [first, last] : {std::pair<uint64_t, uint64_t>{32, 64}, {64, kTokens}, {40, 41}}) {
    auto got = Rows(p200_, 0, first, last);
    ASSERT_TRUE(got.ok()) << "[" << first << ", " << last << "): " << got.status().ToString();
    EXPECT_TRUE(*got == Expected(p200_, 0, first, last, blobs_[0]));
  }
  auto dsa = Rows(p200_, 1, 0, kTokens);  // another layer's records
  ASSERT_TRUE(dsa.ok()) << dsa.status().ToString();
  EXPECT_TRUE(*dsa == Expected(p200_, 1, 0, kTokens, blobs_[1]));
  // A whole read of the layer checks every record and the layer digest.
  EXPECT_TRUE(store_->GetLayer(ns_, p200_, 1).ok());

  auto bad = Rows(p200_, 0, 30, 33);  // its last rows
  ASSERT_TRUE(bad.status().IsCorruption()) << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("chunk 0 of put"), std::string::npos)
      << bad.status().ToString();
  // The damaged record quarantines every snapshot using it.
  EXPECT_TRUE(store_->GetManifest(ns_, p200_).status().IsNotFound());
  EXPECT_TRUE(store_->GetManifest(ns_, p64_).status().IsNotFound());
}

TEST_F(StoreRowsPagedTest, ALayerWithoutPagesIsReadAndVerifiedWhole) {
  const Prefix whole = testing::PrefixFromSeed(7);
  const auto blobs = Put(whole, kTokens, /*chained=*/false);
  ASSERT_TRUE(store_->GetManifest(ns_, whole)->FindLayer(0)->runs.empty());
  auto got = Rows(whole, 0, 100, 150);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == Expected(whole, 0, 100, 150, blobs[0]));
  // Its last record, outside rows [100, 150): the layer digest catches it.
  DamageRecord(si::RecordKey(ns_, PutOf(whole), 0, 0, 6));
  auto bad = Rows(whole, 0, 100, 150);
  EXPECT_TRUE(bad.status().IsCorruption()) << bad.status().ToString();
}

TEST_F(StoreRowsPagedTest, RefusalsReadNothing) {
  std::vector<uint8_t> small(100);
  EXPECT_TRUE(store_->ReadLayerRows(ns_, p200_, 0, 0, 1, small).status().code() ==
              StatusCode::kOutOfRange);
  EXPECT_TRUE(store_->ReadLayerRows(ns_, p200_, 0, 5, 4, small).status().code() ==
              StatusCode::kOutOfRange);
  EXPECT_TRUE(store_->ReadLayerRows(ns_, p200_, 0, 0, kTokens + 1, small).status().code() ==
              StatusCode::kOutOfRange);
  EXPECT_TRUE(store_->ReadLayerRows(ns_, p200_, 9, 0, 0, small).status().IsNotFound());
  EXPECT_TRUE(store_->ReadLayerRows(ns_, p64_, 0, 0, 0, small).ok());
}

}  // namespace
}  // namespace auxstore
