// Rows, pages and the layer digest (format/layer_layout.cc, docs/format.md,
// "Pages"): which stored bytes make up a layer and how they are hashed.
#include "format/layer_layout.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>
#include <string>
#include <vector>

#include "format/byte_order.h"
#include "tests/format/test_util.h"

namespace auxstore {
namespace {

using test::RandomBytes;

constexpr PutId kPut = 7, kOwner = 3;

// A DSA layer of 11 rows (16 + 4 + 1 bytes per row) in pages of 4: pages 0-1
// stored by kOwner (which stored from page 0 at chunk size 20), the tail
// (rows 8-10) by the manifest's own put.
Manifest PagedDsa() {
  Manifest m;
  m.put_id = kPut;
  m.chunk_bytes = 24;
  m.page_tokens = 4;
  LayerEntry l{2, Kind::kDsa, 16 + 11 * 21, 0, std::vector<uint8_t>(16, 9), 11, {16, 4, 1}, {}};
  l.runs = {{kOwner, 0, 20, 0, 2}};
  m.layers = {l};
  return m;
}

uint64_t Xxh3(const uint8_t* p, size_t n) { return XXH3_64bits(p, n); }

// The digest as docs/format.md defines it, computed the long way.
uint64_t DigestByHand(const Manifest& m, const LayerEntry& l, const std::vector<uint8_t>& blob) {
  std::string in(blob.begin(), blob.begin() + l.header.size());
  const uint32_t pages = l.full_pages();
  for (size_t a = 0; a < l.row_bytes.size(); ++a) {
    const uint8_t* array = blob.data() + ArrayOffset(l, a);
    const uint64_t page = uint64_t{m.page_tokens} * l.row_bytes[a];
    auto add = [&](const uint8_t* p, size_t n) {
      uint8_t le[8];
      internal::PutLE64(le, Xxh3(p, n));
      in.append(reinterpret_cast<const char*>(le), 8);
    };
    for (uint32_t p = 0; p < pages; ++p) add(array + p * page, page);
    add(array + pages * page, (l.rows - uint64_t{pages} * m.page_tokens) * l.row_bytes[a]);
  }
  return XXH3_64bits(in.data(), in.size());
}

TEST(LayerLayout, ArraysFollowTheHeaderInBlobOrder) {
  const Manifest m = PagedDsa();
  const LayerEntry& l = m.layers[0];
  EXPECT_EQ(ArrayOffset(l, 0), 16u);
  EXPECT_EQ(ArrayOffset(l, 1), 16u + 11 * 16);
  EXPECT_EQ(ArrayOffset(l, 2), 16u + 11 * 20);
}

TEST(LayerLayout, OwnStreamHoldsOwnPagesThenTheTail) {
  Manifest m = PagedDsa();
  const LayerEntry& l = m.layers[0];
  EXPECT_EQ(OwnFirstPage(m, l), 2u);  // it stored no page
  EXPECT_EQ(TailBytes(m, l, 0), 3u * 16);
  EXPECT_EQ(OwnStreamBytes(m, l, 0), 3u * 16);
  m.layers[0].runs = {{kOwner, 0, 20, 0, 1}, {kPut, 1, 24, 1, 1}};
  EXPECT_EQ(OwnFirstPage(m, m.layers[0]), 1u);
  EXPECT_EQ(OwnStreamBytes(m, m.layers[0], 1), 4u * 4 + 3 * 4);
}

TEST(LayerLayout, UsedPutsAreTheOwnPutAndEveryOwnerOnce) {
  Manifest m = PagedDsa();
  m.layers.push_back(m.layers[0]);
  m.layers[1].layer = 5;
  m.layers[1].runs = {{9, 0, 20, 0, 1}, {kOwner, 1, 20, 1, 1}};
  EXPECT_EQ(UsedPuts(m), (std::vector<PutId>{kOwner, kPut, 9}));
}

TEST(PlanPieces, CoverEveryByteAfterTheHeaderOnceInBlobOrder) {
  const Manifest m = PagedDsa();
  const LayerEntry& l = m.layers[0];
  const auto pieces = PlanPieces(m, l);
  uint64_t at = l.header.size();
  for (const LayerPiece& p : pieces) {
    EXPECT_EQ(p.blob_offset, at);
    EXPECT_GT(p.bytes, 0u);
    EXPECT_LE(uint64_t{p.chunk_offset} + p.bytes, p.owner == kOwner ? 20u : 24u)
        << "a piece stays inside one chunk of its owner's stream";
    at += p.bytes;
  }
  EXPECT_EQ(at, l.bytes);
}

TEST(PlanPieces, SharedPagesAreReadFromTheOwnersStreamAtItsChunkSize) {
  const Manifest m = PagedDsa();
  const auto pieces = PlanPieces(m, m.layers[0]);
  // Array 0: pages 0-1 are 2 * 4 * 16 = 128 bytes of kOwner's stream in
  // chunks of 20: chunk 0 .. 6 (6 * 20 = 120, then 8 bytes of chunk 6).
  ASSERT_GE(pieces.size(), 8u);
  EXPECT_EQ(pieces[0].owner, kOwner);
  EXPECT_EQ(pieces[0].array, 0);
  EXPECT_EQ(pieces[0].chunk, 0u);
  EXPECT_EQ(pieces[6].chunk, 6u);
  EXPECT_EQ(pieces[6].bytes, 8u);
  // Then the tail, 48 bytes, from the own put's stream at offset 0.
  EXPECT_EQ(pieces[7].owner, kPut);
  EXPECT_EQ(pieces[7].chunk, 0u);
  EXPECT_EQ(pieces[7].chunk_offset, 0u);
  EXPECT_EQ(pieces[7].bytes, 24u);
}

TEST(PlanPieces, ARunStartingLaterInItsOwnersStreamSkipsItsEarlierPages) {
  Manifest m = PagedDsa();
  m.layers[0].runs = {{kOwner, 0, 20, 0, 1}, {5, 0, 20, 1, 1}};  // put 5 stored from page 0
  const auto pieces = PlanPieces(m, m.layers[0]);
  // Page 1 of array 0 is bytes [64, 128) of put 5's stream: chunk 3 at 4.
  auto it = std::find_if(pieces.begin(), pieces.end(),
                         [](const LayerPiece& p) { return p.owner == 5 && p.array == 0; });
  ASSERT_NE(it, pieces.end());
  EXPECT_EQ(it->chunk, 3u);
  EXPECT_EQ(it->chunk_offset, 4u);
  EXPECT_EQ(it->blob_offset, 16u + 64);
}

TEST(LayerHasher, IsTheDocumentedDigestOfPagesAndTails) {
  const Manifest m = PagedDsa();
  const LayerEntry& l = m.layers[0];
  const auto blob = RandomBytes(l.bytes, 1);
  LayerHasher h(m, l);
  h.Update(blob);
  EXPECT_EQ(h.Digest(), DigestByHand(m, l, blob));
}

TEST(LayerHasher, AnUnpagedLayerHashesEachArrayWhole) {
  Manifest m = PagedDsa();
  m.layers[0].runs.clear();
  const LayerEntry& l = m.layers[0];
  const auto blob = RandomBytes(l.bytes, 2);
  LayerHasher h(m, l);
  h.Update(blob);
  EXPECT_EQ(h.Digest(), DigestByHand(m, l, blob));
}

TEST(LayerHasher, StreamingInAnyPiecesEqualsOneShot) {
  const Manifest m = PagedDsa();
  const LayerEntry& l = m.layers[0];
  const auto blob = RandomBytes(l.bytes, 3);
  std::mt19937 rng(4);
  for (int trial = 0; trial < 50; ++trial) {
    LayerHasher h(m, l);
    size_t off = 0;
    while (off < blob.size()) {
      const size_t n = std::min<size_t>(rng() % 40, blob.size() - off);
      h.Update(ByteSpan(blob).subspan(off, n));
      off += n;
    }
    EXPECT_EQ(h.Digest(), DigestByHand(m, l, blob));
  }
}

TEST(LayerHasher, EqualsTheDigestComposedFromPageAndTailHashes) {
  // What a writer does for pages it shares: it never reads them, it reuses
  // the hashes their owner recorded.
  const Manifest m = PagedDsa();
  const LayerEntry& l = m.layers[0];
  auto blob = RandomBytes(l.bytes, 5);
  std::copy(l.header.begin(), l.header.end(), blob.begin());  // a blob starts with its header
  std::vector<std::vector<uint64_t>> pages(3);
  std::vector<uint64_t> tails;
  for (size_t a = 0; a < 3; ++a) {
    const uint8_t* array = blob.data() + ArrayOffset(l, a);
    const uint64_t page = uint64_t{4} * l.row_bytes[a];
    for (int p = 0; p < 2; ++p) pages[a].push_back(Xxh3(array + p * page, page));
    tails.push_back(Xxh3(array + 2 * page, 3 * l.row_bytes[a]));
  }
  LayerHasher h(m, l);
  h.Update(blob);
  EXPECT_EQ(LayerDigest(l.header, pages, tails), h.Digest());
}

TEST(LayerHasher, DetectsAnyFlippedByteAMissingByteAndAnExtraByte) {
  const Manifest m = PagedDsa();
  const LayerEntry& l = m.layers[0];
  auto blob = RandomBytes(l.bytes, 6);
  LayerHasher good(m, l);
  good.Update(blob);
  for (size_t i = 0; i < blob.size(); ++i) {
    blob[i] ^= 0x40;
    LayerHasher h(m, l);
    h.Update(blob);
    EXPECT_NE(h.Digest(), good.Digest()) << "byte " << i;
    blob[i] ^= 0x40;
  }
  LayerHasher shorter(m, l);
  shorter.Update(ByteSpan(blob).first(blob.size() - 1));
  EXPECT_NE(shorter.Digest(), good.Digest());
  LayerHasher longer(m, l);
  longer.Update(blob);
  const uint8_t extra = 0;
  longer.Update(ByteSpan(&extra, 1));
  EXPECT_NE(longer.Digest(), good.Digest());
}

TEST(LayerHasher, SwappedPagesDoNotHashAlike) {
  // The digest names each page by position: two pages exchanged differ.
  const Manifest m = PagedDsa();
  const LayerEntry& l = m.layers[0];
  auto blob = RandomBytes(l.bytes, 7);
  LayerHasher a(m, l);
  a.Update(blob);
  std::swap_ranges(blob.begin() + 16, blob.begin() + 16 + 64, blob.begin() + 16 + 64);
  LayerHasher b(m, l);
  b.Update(blob);
  EXPECT_NE(a.Digest(), b.Digest());
}

TEST(CheckLayerDigest, NamesTheLayerAndBothDigests) {
  LayerEntry e;
  e.layer = 4;
  e.xxh3 = 0x10;
  EXPECT_TRUE(CheckLayerDigest(e, 0x10).ok());
  EXPECT_ERROR(CheckLayerDigest(e, 0x20), kCorruption,
               "layer 4: layer digest 0000000000000020 does not match the manifest's "
               "0000000000000010");
}

}  // namespace
}  // namespace auxstore
