// Store::ReadLayersInto: several layers of one snapshot into caller memory
// under one manifest read, each exactly as ReadLayerInto reads it; a
// layer's own error fails that layer, a snapshot gone or damaged fails the
// layers not yet read.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "auxstore/prefix.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "tests/store/record_damage.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::RandomBytes;
using LayerInto = Store::LayerInto;

constexpr uint32_t kChunk = 4096;

class ReadLayersIntoTest : public testing::StoreFixture {
 protected:
  void SetUp() override {
    testing::StoreFixture::SetUp();
    options_.chunk_bytes = kChunk;  // several pieces per layer
    options_.background_maintenance = false;
    Reopen();
  }

  // Puts opaque layers 0..sizes.size()-1 of `sizes` bytes under `p`.
  std::vector<std::vector<uint8_t>> PutLayers(const Prefix& p, const std::vector<size_t>& sizes,
                                              uint64_t seed) {
    std::vector<std::vector<uint8_t>> blobs;
    std::vector<LayerBlob> layers;
    for (size_t l = 0; l < sizes.size(); ++l) blobs.push_back(RandomBytes(sizes[l], seed * 31 + l));
    for (size_t l = 0; l < sizes.size(); ++l) {
      layers.push_back({static_cast<uint32_t>(l), Kind::kOpaque, blobs[l]});
    }
    EXPECT_TRUE(store_->PutSnapshot(ns_, p, 1, layers).ok());
    return blobs;
  }

  // One destination per layer, `room` bytes each, filled with 0xee.
  static std::vector<LayerInto> Into(const std::vector<uint32_t>& layers,
                                     std::vector<std::vector<uint8_t>>& room, size_t bytes) {
    std::vector<LayerInto> out;
    room.assign(layers.size(), std::vector<uint8_t>(bytes, 0xee));
    for (size_t i = 0; i < layers.size(); ++i) out.push_back({layers[i], room[i]});
    return out;
  }

  static std::vector<uint8_t> Got(const LayerInto& l) {
    return {l.dst.begin(), l.dst.begin() + static_cast<std::ptrdiff_t>(l.bytes)};
  }
};

TEST_F(ReadLayersIntoTest, ReadsEveryLayerAsReadLayerIntoDoesInAnyOrder) {
  const Prefix p = PrefixFromSeed(1);
  const auto blobs = PutLayers(p, {3 * kChunk + 5, 100, 0, 2 * kChunk}, 1);
  PutLayers(PrefixFromSeed(2), {kChunk, kChunk}, 2);  // a neighbour's records around
  std::vector<std::vector<uint8_t>> room;
  auto layers = Into({3, 0, 2, 1, 0}, room, 4 * kChunk);
  ASSERT_TRUE(store_->ReadLayersInto(ns_, p, layers).ok());
  const uint32_t want[] = {3, 0, 2, 1, 0};
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_TRUE(layers[i].status.ok()) << i << ": " << layers[i].status.ToString();
    EXPECT_EQ(Got(layers[i]), blobs[want[i]]) << "target " << i;
    std::vector<uint8_t> alone(4 * kChunk);
    auto n = store_->ReadLayerInto(ns_, p, want[i], alone);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, layers[i].bytes);
  }
  EXPECT_EQ(room[2][0], 0xee) << "an empty layer writes nothing";
  EXPECT_TRUE(store_->ReadLayersInto(ns_, p, {}).ok()) << "no layer: nothing to do";
}

TEST_F(ReadLayersIntoTest, APagedSnapshotsLayersReadFromEveryOwnerPut) {
  const NamespaceSpec spec = testing::TestSpec();
  constexpr uint32_t kBlock = 16;
  std::vector<uint32_t> tokens(128);
  for (uint32_t t = 0; t < tokens.size(); ++t) tokens[t] = 7 + t;
  const auto keys = RandomBytes(tokens.size() * spec.qsa.hd * 2, 5);
  std::vector<std::vector<uint8_t>> longest;
  for (uint64_t n : {64u, 128u}) {
    auto qsa =
        EncodeQsaBlob(n, n / spec.qsa.ratio, ByteSpan(keys).first(n * spec.qsa.hd * 2), spec.qsa.hd)
            .value();
    const auto opaque = RandomBytes(n * 10, n);
    const std::vector<Prefix> chain = PrefixHashes(std::span(tokens).first(n), kBlock, 0);
    PutOptions o;
    o.block_chain = chain;  // a view: the chain outlives the put
    o.block_size = kBlock;
    const LayerBlob layers[] = {{0, Kind::kQsa, qsa}, {1, Kind::kOpaque, opaque}};
    ASSERT_TRUE(store_->PutSnapshot(ns_, PrefixFromSeed(n), n, layers, o).ok());
    longest = {qsa, opaque};
  }
  std::vector<std::vector<uint8_t>> room;
  auto layers = Into({0, 1}, room, longest[0].size() + longest[1].size());
  ASSERT_TRUE(store_->ReadLayersInto(ns_, PrefixFromSeed(128), layers).ok());
  EXPECT_EQ(Got(layers[0]), longest[0]);
  EXPECT_EQ(Got(layers[1]), longest[1]);
}

TEST_F(ReadLayersIntoTest, ALayersOwnErrorFailsThatLayerOnly) {
  const Prefix p = PrefixFromSeed(1);
  const auto blobs = PutLayers(p, {2 * kChunk, 3 * kChunk}, 1);
  std::vector<uint8_t> small(2 * kChunk, 0xee), big(3 * kChunk), also(2 * kChunk);
  std::vector<LayerInto> layers = {{9, also}, {1, small}, {0, big}};
  const Status st = store_->ReadLayersInto(ns_, p, layers);
  EXPECT_TRUE(st.IsNotFound()) << "the first error: " << st.ToString();
  EXPECT_TRUE(layers[0].status.IsNotFound()) << layers[0].status.ToString();
  EXPECT_EQ(layers[1].status.code(), StatusCode::kOutOfRange) << layers[1].status.ToString();
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0xee; }))
      << "too small: nothing written";
  EXPECT_TRUE(layers[2].status.ok()) << layers[2].status.ToString();
  EXPECT_EQ(Got(layers[2]), blobs[0]);
  EXPECT_EQ(store_->Stats().quarantines, 0u);
}

TEST_F(ReadLayersIntoTest, AMissingSnapshotFailsEveryLayer) {
  std::vector<std::vector<uint8_t>> room;
  auto layers = Into({0, 1}, room, kChunk);
  EXPECT_TRUE(store_->ReadLayersInto(ns_, PrefixFromSeed(5), layers).IsNotFound());
  for (const LayerInto& l : layers) {
    EXPECT_TRUE(l.status.IsNotFound()) << l.status.ToString();
    EXPECT_EQ(l.bytes, 0u);
  }
  EXPECT_EQ(room[0][0], 0xee);
}

TEST_F(ReadLayersIntoTest, ADamagedLayerQuarantinesAndFailsTheLayersNotYetRead) {
  const Prefix p = PrefixFromSeed(1), other = PrefixFromSeed(2);
  const auto blobs = PutLayers(p, {kChunk, 2 * kChunk, kChunk}, 1);
  const auto kept = PutLayers(other, {kChunk}, 2);
  const std::string key =
      store_internal::RecordKey(ns_, store_->GetManifest(ns_, p)->put_id, 1, 0, 1);
  Close();
  testing::RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() / 2] ^= 0x10; });
  Open();
  std::vector<std::vector<uint8_t>> room;
  auto layers = Into({0, 1, 2}, room, 2 * kChunk);
  EXPECT_TRUE(store_->ReadLayersInto(ns_, p, layers).IsCorruption());
  EXPECT_TRUE(layers[0].status.ok()) << "read before the damage";
  EXPECT_EQ(Got(layers[0]), blobs[0]);
  EXPECT_TRUE(layers[1].status.IsCorruption()) << layers[1].status.ToString();
  EXPECT_TRUE(layers[2].status.IsCorruption()) << layers[2].status.ToString();
  EXPECT_NE(layers[2].status.message().find("not read"), std::string::npos)
      << layers[2].status.message();
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
  EXPECT_EQ(store_->GetLayer(ns_, other, 0).value(), kept[0]) << "only the damaged snapshot goes";
}

// The copy into caller memory checks each layer's digest instead of each
// record's own checksum (one hash pass per byte); a digest that differs
// sends it back over the records with their checksums, so the damaged
// record is still the one named and quarantined.
TEST_F(ReadLayersIntoTest, ADamagedRecordIsStillNamedThoughTheCopyChecksTheLayerDigestFirst) {
  const Prefix p = PrefixFromSeed(1);
  PutLayers(p, {3 * kChunk}, 1);
  const std::string key =
      store_internal::RecordKey(ns_, store_->GetManifest(ns_, p)->put_id, 0, 0, 2);
  Close();
  testing::RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() - 1] ^= 0x01; });
  Open();
  std::vector<uint8_t> dst(3 * kChunk);
  const auto got = store_->ReadLayerInto(ns_, p, 0, dst);
  ASSERT_TRUE(got.status().IsCorruption()) << got.status().ToString();
  EXPECT_NE(got.status().message().find("layer 0 array 0 chunk 2 of put"), std::string::npos)
      << got.status().message();
  EXPECT_NE(got.status().message().find("checksum"), std::string::npos) << got.status().message();
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
}

// Pieces of a mebibyte and more are read ahead on the store's read pool
// while the one before is hashed and copied (each by an iterator of its
// own); smaller ones, here each layer's tail and a small layer between, are
// read in turn. The bytes are exact, and damage in a piece read ahead is
// still found, named and quarantined.
TEST_F(ReadLayersIntoTest, MultiMiBPiecesReadAheadArriveExactAndTheirDamageIsNamed) {
  options_.chunk_bytes = 1u << 20;
  Reopen();
  const Prefix p = PrefixFromSeed(1), other = PrefixFromSeed(2);
  const size_t big = (3u << 20) + 5000;  // pieces of 1, 1, 1 MiB and 5000 bytes
  const auto blobs = PutLayers(p, {big, 7000, big}, 1);
  const auto kept = PutLayers(other, {big}, 2);
  std::vector<std::vector<uint8_t>> room;
  auto layers = Into({2, 1, 0}, room, big);
  ASSERT_TRUE(store_->ReadLayersInto(ns_, p, layers).ok());
  EXPECT_EQ(Got(layers[0]), blobs[2]);
  EXPECT_EQ(Got(layers[1]), blobs[1]);
  EXPECT_EQ(Got(layers[2]), blobs[0]);

  // Chunk 2 of layer 0 is read ahead while chunk 1 is checked.
  const std::string key =
      store_internal::RecordKey(ns_, store_->GetManifest(ns_, p)->put_id, 0, 0, 2);
  Close();
  testing::RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() / 2] ^= 0x01; });
  Open();
  layers = Into({0, 2}, room, big);
  const Status st = store_->ReadLayersInto(ns_, p, layers);
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("layer 0 array 0 chunk 2 of put"), std::string::npos) << st.message();
  EXPECT_TRUE(layers[1].status.IsCorruption()) << "the snapshot is gone for the layers after it";
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
  std::vector<uint8_t> dst(big);
  ASSERT_EQ(store_->ReadLayerInto(ns_, other, 0, dst).value(), big);
  EXPECT_EQ(dst, kept[0]) << "only the damaged snapshot goes";
}

// A layer's first piece of a mebibyte and more is read while the layer
// before it is copied (PrefetchFirstPiece): damage in it is found and named
// as in any other piece, and the layer before stays read.
TEST_F(ReadLayersIntoTest, AFirstPieceReadWhileTheLayerBeforeIsCopiedIsCheckedAsAnyOther) {
  options_.chunk_bytes = 1u << 20;
  options_.read_lanes = 1;  // layers in turn (with lanes nothing is prefetched)
  Reopen();
  const Prefix p = PrefixFromSeed(1);
  const size_t big = (2u << 20) + 100;
  const auto blobs = PutLayers(p, {big, big, big}, 1);
  std::vector<std::vector<uint8_t>> room;
  auto layers = Into({0, 1, 2}, room, big);
  ASSERT_TRUE(store_->ReadLayersInto(ns_, p, layers).ok());
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(Got(layers[i]), blobs[i]) << "layer " << i;

  const std::string key =
      store_internal::RecordKey(ns_, store_->GetManifest(ns_, p)->put_id, 1, 0, 0);
  Close();
  testing::RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() / 3] ^= 0x04; });
  Open();
  layers = Into({0, 1, 2}, room, big);
  const Status st = store_->ReadLayersInto(ns_, p, layers);
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  ASSERT_TRUE(layers[0].status.ok()) << layers[0].status.ToString();
  EXPECT_EQ(Got(layers[0]), blobs[0]);
  EXPECT_NE(layers[1].status.message().find("layer 1 array 0 chunk 0 of put"), std::string::npos)
      << layers[1].status.message();
  EXPECT_TRUE(layers[2].status.IsCorruption());
  EXPECT_EQ(store_->Stats().quarantines, 1u);
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
}

// Layers holding 2 MiB or more in all are copied by Options::read_lanes
// lanes at once: every layer arrives exact whatever the order asked, and a
// layer's own error (not in the snapshot, a destination too small) fails
// that layer only, as when the layers are read in turn.
TEST_F(ReadLayersIntoTest, LanesCopyMultiMiBLayersExactlyWithEachLayersOwnOutcome) {
  options_.chunk_bytes = 1u << 20;
  const std::vector<size_t> sizes = {(3u << 20) + 5000, 7000, 2u << 20,
                                     (1u << 20) + 1,    4096, 3u << 20};
  const std::vector<uint32_t> order = {5, 0, 9, 3, 1, 4, 2};  // 9: not in the snapshot
  std::vector<std::vector<Status>> outcomes;
  for (uint32_t lanes : {4u, 1u}) {
    options_.read_lanes = lanes;
    Reopen();
    auto& db = dynamic_cast<store_internal::DbStore&>(*store_);
    const Prefix p = PrefixFromSeed(lanes);
    const auto blobs = PutLayers(p, sizes, lanes);
    std::vector<std::vector<uint8_t>> room;
    auto layers = Into(order, room, 4u << 20);
    layers[3].dst = layers[3].dst.first(1000);  // layer 3 needs 1 MiB + 1
    const Status st = store_->ReadLayersInto(ns_, p, layers);
    EXPECT_TRUE(st.IsNotFound()) << "the first layer's error, in the order asked: "
                                 << st.ToString();
    std::vector<Status> got;
    for (size_t i = 0; i < layers.size(); ++i) {
      got.push_back(layers[i].status);
      if (order[i] == 9) {
        EXPECT_TRUE(layers[i].status.IsNotFound()) << layers[i].status.ToString();
      } else if (order[i] == 3) {
        EXPECT_EQ(layers[i].status.code(), StatusCode::kOutOfRange) << layers[i].status.ToString();
      } else {
        ASSERT_TRUE(layers[i].status.ok())
            << lanes << " lanes, layer " << order[i] << ": " << layers[i].status.ToString();
        EXPECT_EQ(Got(layers[i]), blobs[order[i]]) << lanes << " lanes, layer " << order[i];
      }
    }
    outcomes.push_back(got);
    EXPECT_EQ(db.LaneReadsForTest(), lanes > 1 ? 1u : 0u) << lanes << " lanes";
    // A big layer and a small one: nothing to share out, read in turn.
    auto two = Into({0, 4}, room, 4u << 20);
    ASSERT_TRUE(store_->ReadLayersInto(ns_, p, two).ok());
    EXPECT_EQ(Got(two[0]), blobs[0]);
    EXPECT_EQ(Got(two[1]), blobs[4]);
    EXPECT_EQ(db.LaneReadsForTest(), lanes > 1 ? 1u : 0u) << "the pair took lanes";
    EXPECT_EQ(store_->Stats().quarantines, 0u);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(outcomes[0][i].code(), outcomes[1][i].code()) << "layer " << order[i];
  }
}

// Damage found by one lane while others still read the layers before it:
// the snapshot is quarantined only once every lane stopped, so those layers
// arrive whole (as they would in turn, not NotFound), the damaged layer
// names its record, the layers after it fail, and only that snapshot goes.
// Small damaged layers behind big ones make the lanes overlap.
TEST_F(ReadLayersIntoTest, LanesReadTheLayersBeforeADamagedOneWholeAndQuarantineAfterward) {
  options_.chunk_bytes = 1u << 20;
  options_.read_lanes = 4;
  Reopen();
  const size_t big = 16u << 20;  // still being read when the damage is found
  const std::vector<size_t> sizes = {big, big, big, 7000, 1u << 20, 1u << 20};
  const Prefix other = PrefixFromSeed(100);
  const auto kept = PutLayers(other, {big}, 100);
  constexpr int kSnapshots = 3;
  std::vector<std::vector<std::vector<uint8_t>>> blobs;
  std::vector<std::string> damaged;
  for (int i = 0; i < kSnapshots; ++i) {
    blobs.push_back(PutLayers(PrefixFromSeed(i), sizes, i));
    damaged.push_back(store_internal::RecordKey(
        ns_, store_->GetManifest(ns_, PrefixFromSeed(i))->put_id, 3, 0, 0));
  }
  Close();
  for (const std::string& key : damaged) {
    testing::RewriteRecord(path(), key, [](std::string* v) { (*v)[v->size() / 2] ^= 0x02; });
  }
  Open();
  for (int i = 0; i < kSnapshots; ++i) {
    std::vector<std::vector<uint8_t>> room;
    auto layers = Into({0, 1, 2, 3, 4, 5}, room, big);
    const Status st = store_->ReadLayersInto(ns_, PrefixFromSeed(i), layers);
    ASSERT_TRUE(st.IsCorruption()) << "snapshot " << i << ": " << st.ToString();
    for (size_t l = 0; l < 3; ++l) {
      ASSERT_TRUE(layers[l].status.ok())
          << "snapshot " << i << " layer " << l << ": " << layers[l].status.ToString();
      EXPECT_EQ(Got(layers[l]), blobs[i][l]) << "snapshot " << i << " layer " << l;
    }
    EXPECT_NE(layers[3].status.message().find("layer 3 array 0 chunk 0 of put"), std::string::npos)
        << layers[3].status.message();
    for (size_t l = 4; l < 6; ++l) {
      EXPECT_TRUE(layers[l].status.IsCorruption()) << layers[l].status.ToString();
      EXPECT_EQ(layers[l].bytes, 0u);
    }
    EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(i)).status().IsNotFound());
  }
  EXPECT_EQ(store_->Stats().quarantines, static_cast<uint64_t>(kSnapshots));
  EXPECT_EQ(dynamic_cast<store_internal::DbStore&>(*store_).LaneReadsForTest(),
            static_cast<uint64_t>(kSnapshots));
  std::vector<uint8_t> dst(big);
  ASSERT_EQ(store_->ReadLayerInto(ns_, other, 0, dst).value(), big);
  EXPECT_EQ(dst, kept[0]) << "only the damaged snapshots go";
}

// A snapshot erased and put again with other bytes between a lanes read's
// manifest read and its first record: the lanes meet its records gone, and
// the call reads every layer again under the new manifest.
TEST_F(ReadLayersIntoTest, LanesReadASnapshotReplacedUnderThemAgainUnderItsNewManifest) {
  options_.chunk_bytes = 1u << 20;
  options_.read_lanes = 3;
  Reopen();
  const Prefix p = PrefixFromSeed(1);
  const size_t big = (2u << 20) + 300;
  const auto before = PutLayers(p, {big, big, big}, 1);
  std::vector<std::vector<uint8_t>> after;
  auto& db = dynamic_cast<store_internal::DbStore&>(*store_);
  bool replaced = false;
  db.SetAfterManifestReadForTest([&] {
    if (replaced) return;
    replaced = true;
    EXPECT_TRUE(store_->Erase(ns_, p).ok());
    after = PutLayers(p, {big, big, big}, 2);
  });
  const uint64_t repeated = store_->Stats().reads_repeated;
  std::vector<std::vector<uint8_t>> room;
  auto layers = Into({2, 0, 1}, room, big);
  const Status st = store_->ReadLayersInto(ns_, p, layers);
  db.SetAfterManifestReadForTest(nullptr);
  ASSERT_TRUE(replaced);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Got(layers[0]), after[2]);
  EXPECT_EQ(Got(layers[1]), after[0]);
  EXPECT_EQ(Got(layers[2]), after[1]);
  EXPECT_NE(after[0], before[0]);
  EXPECT_GE(store_->Stats().reads_repeated, repeated + 1) << "it did not read again";
  EXPECT_EQ(db.LaneReadsForTest(), 2u) << "both passes in lanes";
  EXPECT_EQ(store_->Stats().quarantines, 0u);
}

// Reads that read ahead and prefetch multi-MiB pieces, beside a writer that
// erases the snapshot and puts it again with other bytes: every read returns
// one whole version or NotFound (erased while read), never bytes of two
// versions, never Corruption, and nothing is quarantined.
TEST_F(ReadLayersIntoTest, MultiMiBReadsBesideAnEraseAndPutWriterSeeOneWholeVersionOrNotFound) {
  options_.chunk_bytes = 1u << 20;
  Reopen();
  const Prefix p = PrefixFromSeed(1);
  const size_t big = (3u << 20) + 5000;
  std::vector<std::vector<std::vector<uint8_t>>> versions;
  for (uint64_t v = 0; v < 2; ++v) {
    versions.push_back({RandomBytes(big, 100 + v), RandomBytes(big, 200 + v)});
  }
  auto put = [&](size_t v) {
    const LayerBlob layers[] = {{0, Kind::kOpaque, versions[v][0]},
                                {1, Kind::kOpaque, versions[v][1]}};
    return store_->PutSnapshot(ns_, p, 1, layers);
  };
  ASSERT_TRUE(put(0).ok());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (size_t round = 1; round <= 12; ++round) {
      EXPECT_TRUE(store_->Erase(ns_, p).ok());
      EXPECT_TRUE(put(round % 2).ok());
    }
    done = true;
  });
  size_t whole = 0, not_found = 0;
  std::vector<std::vector<uint8_t>> room;
  while (!done || whole == 0) {
    auto layers = Into({0, 1}, room, big);
    const Status st = store_->ReadLayersInto(ns_, p, layers);
    if (st.IsNotFound()) {
      ++not_found;
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.ToString();
    const bool v0 = Got(layers[0]) == versions[0][0] && Got(layers[1]) == versions[0][1];
    const bool v1 = Got(layers[0]) == versions[1][0] && Got(layers[1]) == versions[1][1];
    ASSERT_TRUE(v0 || v1) << "a read mixed versions or returned wrong bytes";
    ++whole;
  }
  writer.join();
  RecordProperty("whole_reads", static_cast<int>(whole));
  RecordProperty("reads_that_met_an_erase", static_cast<int>(not_found));
  EXPECT_GT(whole, 0u);
  EXPECT_EQ(store_->Stats().quarantines, 0u) << not_found << " reads met an erase";
}

// A record's bytes copied whole under another record's key: every header
// check passes, only the key-seeded checksum tells; the layer digest
// catches it and the checksums name the record.
TEST_F(ReadLayersIntoTest, ARecordMovedUnderAnotherKeyIsNamed) {
  const Prefix p = PrefixFromSeed(1);
  PutLayers(p, {2 * kChunk}, 1);
  const auto put = store_->GetManifest(ns_, p)->put_id;
  const std::string first = store_internal::RecordKey(ns_, put, 0, 0, 0);
  const std::string second = store_internal::RecordKey(ns_, put, 0, 0, 1);
  std::string moved;
  Close();
  testing::RewriteRecord(path(), first, [&](std::string* v) { moved = *v; });
  testing::RewriteRecord(path(), second, [&](std::string* v) { *v = moved; });
  Open();
  std::vector<std::vector<uint8_t>> room;
  auto layers = Into({0}, room, 2 * kChunk);
  EXPECT_TRUE(store_->ReadLayersInto(ns_, p, layers).IsCorruption());
  EXPECT_NE(layers[0].status.message().find("chunk 1 of put"), std::string::npos)
      << layers[0].status.message();
  EXPECT_EQ(store_->Stats().quarantines, 1u);
}

// ReadSnapshotsInto: many snapshots' layers, each snapshot's outcome its
// own, in namespaces next to each other or not.
TEST_F(ReadLayersIntoTest, ManySnapshotsReadAsEachAloneWithTheirOwnOutcomes) {
  NamespaceSpec other_spec = testing::TestSpec();
  other_spec.model_id += "-other";
  const NamespaceId other = store_->RegisterNamespace(other_spec).value();
  std::vector<std::vector<std::vector<uint8_t>>> blobs;
  for (uint64_t s = 1; s <= 4; ++s)
    blobs.push_back(PutLayers(PrefixFromSeed(s), {kChunk + s, 7}, s));
  const auto theirs = std::vector<uint8_t>(RandomBytes(300, 9));
  const LayerBlob their_layer[] = {{0, Kind::kOpaque, theirs}};
  ASSERT_TRUE(store_->PutSnapshot(other, PrefixFromSeed(1), 1, their_layer).ok());
  // Snapshot 3's manifest damaged: its read says Corruption, the others read.
  Close();
  testing::RewriteValue(path(), store_internal::kManifests,
                        store_internal::SnapshotKey(ns_, PrefixFromSeed(3)),
                        [](std::string* v) { (*v)[v->size() / 2] ^= 0x20; });
  Open();
  std::vector<std::vector<uint8_t>> room(8, std::vector<uint8_t>(2 * kChunk, 0xee));
  std::vector<LayerInto> layers = {{1, room[0]}, {0, room[1]},  // snapshot 1
                                   {0, room[2]},                // snapshot 9: absent
                                   {0, room[3]},                // snapshot 3: damaged
                                   {0, room[4]}, {5, room[5]},  // snapshot 4: layer 5 absent
                                   {0, room[6]},                // the other namespace's 1
                                   {0, room[7]}};               // snapshot 2, after it
  std::vector<Store::SnapshotInto> snaps = {
      {ns_, PrefixFromSeed(1), std::span(layers).subspan(0, 2)},
      {ns_, PrefixFromSeed(9), std::span(layers).subspan(2, 1)},
      {ns_, PrefixFromSeed(3), std::span(layers).subspan(3, 1)},
      {ns_, PrefixFromSeed(4), std::span(layers).subspan(4, 2)},
      {other, PrefixFromSeed(1), std::span(layers).subspan(6, 1)},
      {ns_, PrefixFromSeed(2), std::span(layers).subspan(7, 1)}};
  store_->ReadSnapshotsInto(snaps);
  ASSERT_TRUE(layers[0].status.ok()) << layers[0].status.ToString();
  EXPECT_EQ(Got(layers[0]), blobs[0][1]);
  EXPECT_EQ(Got(layers[1]), blobs[0][0]);
  EXPECT_TRUE(layers[2].status.IsNotFound()) << layers[2].status.ToString();
  EXPECT_TRUE(layers[3].status.IsCorruption()) << layers[3].status.ToString();
  EXPECT_EQ(Got(layers[4]), blobs[3][0]);
  EXPECT_TRUE(layers[5].status.IsNotFound()) << layers[5].status.ToString();
  EXPECT_EQ(Got(layers[6]), theirs);
  EXPECT_EQ(Got(layers[7]), blobs[1][0]);
  EXPECT_EQ(room[2][0], 0xee) << "an absent snapshot writes nothing";
  EXPECT_EQ(store_->Stats().quarantines, 1u) << "the damaged manifest only";
  store_->ReadSnapshotsInto({});  // nothing to do
}

// Snapshots that own all their records share one iterator across puts,
// stepping from one put to the next: read in any order, beside an erased put's gap, a chain
// snapshot read from many owners and a damaged record, each still reads as it would alone.
TEST_F(ReadLayersIntoTest, SmallSnapshotsReadOneAfterAnotherStayExactAcrossGapsAndDamage) {
  std::vector<std::vector<std::vector<uint8_t>>> blobs;
  for (uint64_t s = 1; s <= 6; ++s)
    blobs.push_back(PutLayers(PrefixFromSeed(s), {2 * kChunk + s, 3 * kChunk}, s));
  ASSERT_TRUE(store_->Erase(ns_, PrefixFromSeed(3)).ok());
  // A chain: 128 reads 64's pages (another owner) and its own.
  const NamespaceSpec spec = testing::TestSpec();
  std::vector<uint32_t> tokens(128);
  for (uint32_t t = 0; t < tokens.size(); ++t) tokens[t] = 7 + t;
  const auto keys = RandomBytes(tokens.size() * spec.qsa.hd * 2, 5);
  std::vector<uint8_t> chain_qsa;
  for (uint64_t n : {64u, 128u}) {
    chain_qsa =
        EncodeQsaBlob(n, n / spec.qsa.ratio, ByteSpan(keys).first(n * spec.qsa.hd * 2), spec.qsa.hd)
            .value();
    const std::vector<Prefix> chain = PrefixHashes(std::span(tokens).first(n), 16, 0);
    PutOptions o;
    o.block_chain = chain;
    o.block_size = 16;
    const LayerBlob layers[] = {{0, Kind::kQsa, chain_qsa}};
    ASSERT_TRUE(store_->PutSnapshot(ns_, PrefixFromSeed(100 + n), n, layers, o).ok());
  }
  const Manifest longest = store_->GetManifest(ns_, PrefixFromSeed(228)).value();
  bool reads_another_put = false;
  for (const LayerEntry& l : longest.layers)
    for (const PageRun& run : l.runs) reads_another_put |= run.owner != longest.put_id;
  ASSERT_TRUE(reads_another_put) << "the chain's longest snapshot reads 164's pages";
  const auto put5 = store_->GetManifest(ns_, PrefixFromSeed(5))->put_id;
  // A handle's puts take consecutive ids: the iterator steps from one put's
  // records to the next put's (1 to 2, 4 to 5), seeks over 3's gap, back
  // (2's layer 1 then 0) and past a layer not read.
  EXPECT_EQ(store_->GetManifest(ns_, PrefixFromSeed(1))->put_id + 4, put5);
  Close();
  testing::RewriteRecord(path(), store_internal::RecordKey(ns_, put5, 1, 0, 1),
                         [](std::string* v) { (*v)[v->size() / 2] ^= 0x04; });
  Open();

  std::vector<std::vector<uint8_t>> room(12, std::vector<uint8_t>(3 * kChunk + 8, 0xee));
  room[4].resize(chain_qsa.size());
  std::vector<LayerInto> layers = {{0, room[0]}, {1, room[1]},   // 1
                                   {1, room[2]}, {0, room[3]},   // 2
                                   {0, room[4]},                 // 228: the chain's longest
                                   {0, room[5]}, {1, room[6]},   // 4
                                   {0, room[7]}, {1, room[8]},   // 5: its layer 1 damaged
                                   {1, room[9]}, {0, room[10]},  // 6
                                   {0, room[11]}};               // 3: erased
  std::vector<Store::SnapshotInto> snaps = {
      {ns_, PrefixFromSeed(1), std::span(layers).subspan(0, 2)},
      {ns_, PrefixFromSeed(2), std::span(layers).subspan(2, 2)},
      {ns_, PrefixFromSeed(228), std::span(layers).subspan(4, 1)},
      {ns_, PrefixFromSeed(4), std::span(layers).subspan(5, 2)},
      {ns_, PrefixFromSeed(5), std::span(layers).subspan(7, 2)},
      {ns_, PrefixFromSeed(6), std::span(layers).subspan(9, 2)},
      {ns_, PrefixFromSeed(3), std::span(layers).subspan(11, 1)}};
  store_->ReadSnapshotsInto(snaps);
  auto expect = [&](size_t target, const std::vector<uint8_t>& want) {
    EXPECT_TRUE(layers[target].status.ok()) << target << ": " << layers[target].status.ToString();
    EXPECT_EQ(Got(layers[target]), want) << "target " << target;
  };
  expect(0, blobs[0][0]);
  expect(1, blobs[0][1]);
  expect(2, blobs[1][1]);
  expect(3, blobs[1][0]);
  expect(4, chain_qsa);
  expect(5, blobs[3][0]);
  expect(6, blobs[3][1]);
  expect(7, blobs[4][0]);
  EXPECT_TRUE(layers[8].status.IsCorruption()) << layers[8].status.ToString();
  EXPECT_NE(layers[8].status.message().find("layer 1 array 0 chunk 1 of put"), std::string::npos)
      << layers[8].status.message();
  expect(9, blobs[5][1]);
  expect(10, blobs[5][0]);
  EXPECT_TRUE(layers[11].status.IsNotFound()) << layers[11].status.ToString();
  EXPECT_EQ(store_->Stats().quarantines, 1u) << "snapshot 5 only";
}

}  // namespace
}  // namespace auxstore
